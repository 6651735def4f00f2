package sinks

import (
	"strings"
	"unicode/utf8"
)

// Telegram's MarkdownV2 (a bot's sendMessage with parse_mode MarkdownV2)
// refuses a whole message in which one of its reserved characters stands
// unescaped outside the markup ("can't parse entities"), and counts its
// 4,096-character limit after the escapes are taken out. So the Telegram
// functions cut and escape in one step, counting characters as Telegram
// does (a backslash that escapes is not counted; the zero-width space
// after an @ is): a cut after escaping could leave a lone backslash that
// escapes what follows, and one before it could not know the length.

// telegramReserved are the characters MarkdownV2 reserves outside code;
// the backslash is escaped too, so text never escapes what follows it.
// Inside a pre block only ` and \ are.
const (
	telegramReserved     = "_*[]()~`>#+-=|{}.!\\"
	telegramCodeReserved = "`\\"
)

// telegramWeight is what Telegram counts of r once escaped, in UTF-16
// code units as it counts text: a character outside the Basic
// Multilingual Plane (most emoji) is two, and an @ is followed by a
// zero-width space (a name such as @channel_admins then mentions nobody
// in a group).
func telegramWeight(r rune) int {
	switch {
	case r == '@', r > 0xFFFF:
		return 2
	}
	return 1
}

func writeTelegram(b *strings.Builder, s, reserved string) {
	for _, r := range s {
		switch {
		case strings.ContainsRune(reserved, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '@':
			b.WriteString("@" + zwsp)
		default:
			b.WriteRune(r)
		}
	}
}

// TelegramText is s escaped for MarkdownV2 text, at most n characters as
// Telegram counts them, its start kept (ending in … when cut).
func TelegramText(n int, s string) string {
	if n <= 0 {
		return ""
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	cut, used, total := len(s), 0, 0
	for i, r := range s {
		w := telegramWeight(r)
		if cut == len(s) && used+w > n-1 {
			cut = i // where the text stops if it must be cut (room for …)
		}
		used += w
		total += w
		if total > n {
			break
		}
	}
	var b strings.Builder
	if total <= n {
		writeTelegram(&b, s, telegramReserved)
		return b.String()
	}
	writeTelegram(&b, s[:cut], telegramReserved)
	return b.String() + "…"
}

// TelegramCode is s as a MarkdownV2 pre block of at most n characters of
// s as Telegram counts them, its end kept (in a log tail the last lines
// say why; … marks the cut): inside a pre block only ` and \ are
// escaped, and s cannot close the block.
func TelegramCode(n int, s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	total := 0
	for _, r := range s {
		total += telegramWeight(r)
	}
	budget, mark := n, ""
	if total > n {
		budget, mark = n-1, "…" // room for the …
	}
	start, used := len(s), 0
	for start > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:start])
		if used+telegramWeight(r) > budget {
			break
		}
		used += telegramWeight(r)
		start -= size
	}
	var b strings.Builder
	b.Grow(len(s) - start + 16)
	b.WriteString("```\n" + mark)
	writeTelegram(&b, s[start:], telegramCodeReserved)
	b.WriteString("\n```")
	return b.String()
}
