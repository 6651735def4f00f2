package sinks

import "strings"

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
const telegramReserved = "_*[]()~`>#+-=|{}.!\\"

// telegramPieces escapes s rune by rune: reserved (outside code, or the
// few reserved inside) gets a backslash, @ a zero-width space after it
// (a name such as @channel_admins then mentions nobody in a group).
// Each piece's weight is what Telegram counts of it.
func telegramPieces(s, reserved string) (pieces []string, weights []int) {
	s = strings.ToValidUTF8(s, "\uFFFD")
	for _, r := range s {
		switch {
		case strings.ContainsRune(reserved, r):
			pieces, weights = append(pieces, `\`+string(r)), append(weights, 1)
		case r == '@':
			pieces, weights = append(pieces, "@"+zwsp), append(weights, 2)
		default:
			pieces, weights = append(pieces, string(r)), append(weights, 1)
		}
	}
	return pieces, weights
}

// TelegramText is s escaped for MarkdownV2 text, at most n characters as
// Telegram counts them, its start kept (ending in … when cut).
func TelegramText(n int, s string) string {
	if n <= 0 {
		return ""
	}
	pieces, weights := telegramPieces(s, telegramReserved)
	if sum(weights) <= n {
		return strings.Join(pieces, "")
	}
	var b strings.Builder
	for i, used := 0, 0; i < len(pieces) && used+weights[i] <= n-1; i++ {
		b.WriteString(pieces[i])
		used += weights[i]
	}
	return b.String() + "…"
}

// TelegramCode is s as a MarkdownV2 pre block of at most n characters of
// s as Telegram counts them, its end kept (in a log tail the last lines
// say why; … marks the cut): inside a pre block only ` and \ are
// escaped, and s cannot close the block.
func TelegramCode(n int, s string) string {
	pieces, weights := telegramPieces(s, "`\\")
	budget, cut := n, ""
	if sum(weights) > n {
		budget, cut = n-1, "…" // room for the …
	}
	start, used := len(pieces), 0
	for start > 0 && used+weights[start-1] <= budget {
		start--
		used += weights[start]
	}
	return "```\n" + cut + strings.Join(pieces[start:], "") + "\n```"
}

func sum(xs []int) (s int) {
	for _, x := range xs {
		s += x
	}
	return s
}
