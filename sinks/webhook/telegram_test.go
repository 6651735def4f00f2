package webhook

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/herald-k8s/herald/sinks"
)

func init() {
	// Telegram's sendMessage: chat_id and text; text of 1 to 4,096
	// characters after entities parsing; with parse_mode MarkdownV2 it
	// must parse (parseMarkdownV2).
	chatTools["telegram"] = func(doc map[string]any) (bad []string) {
		if id, _ := doc["chat_id"].(string); id == "" {
			bad = append(bad, "needs chat_id")
		}
		if mode, _ := doc["parse_mode"].(string); mode != "MarkdownV2" {
			bad = append(bad, fmt.Sprintf("parse_mode %q, want MarkdownV2", mode))
		}
		text, _ := doc["text"].(string)
		n, err := parseMarkdownV2(text)
		switch {
		case err != nil:
			bad = append(bad, "Bad Request: can't parse entities: "+err.Error())
		case n == 0 || n > 4096:
			bad = append(bad, fmt.Sprintf("text of %d characters after parsing, want 1 to 4096", n))
		}
		return bad
	}
	// ntfy's JSON publishing: a topic; a message of at most 4,096 bytes
	// (past it ntfy turns the message into an attachment); priority 1 to
	// 5; tags a list of strings.
	chatTools["ntfy"] = func(doc map[string]any) (bad []string) {
		if topic, _ := doc["topic"].(string); topic == "" {
			bad = append(bad, "needs a topic")
		}
		msg, _ := doc["message"].(string)
		if len(msg) > 4096 {
			bad = append(bad, fmt.Sprintf("message of %d bytes is over 4096", len(msg)))
		}
		bad = append(bad, required("message", msg, 4096)...)
		title, _ := doc["title"].(string)
		bad = append(bad, limit("title", title, 250)...)
		if p, ok := doc["priority"].(float64); !ok || p < 1 || p > 5 || p != float64(int(p)) {
			bad = append(bad, fmt.Sprintf("priority %v, want 1 to 5", doc["priority"]))
		}
		tags, ok := doc["tags"].([]any)
		for _, t := range tags {
			if _, isString := t.(string); !isString {
				ok = false
			}
		}
		if !ok {
			bad = append(bad, "tags must be a list of strings")
		}
		return bad
	}
}

// parseMarkdownV2 reads s as Telegram's MarkdownV2 parser does (the Bot
// API's "Formatting options") and returns how many characters the message
// has after parsing, in UTF-16 code units as Telegram counts. Errors are what Telegram refuses — a reserved
// character unescaped outside code, an escape of a character outside
// 1–126, an unclosed entity — and what herald promises besides: no link
// and no @ without the zero-width space that keeps it from mentioning.
func parseMarkdownV2(s string) (int, error) {
	const reserved = "_*[]()~`>#+-=|{}.!"
	open := map[string]bool{}
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\':
			next, nsize := utf8.DecodeRuneInString(s[i+1:])
			if nsize == 0 || next < 1 || next > 126 {
				return n, fmt.Errorf("a backslash at byte %d escapes %q", i, next)
			}
			n++ // the escaped character, ASCII
			i += 1 + nsize
			continue
		case strings.HasPrefix(s[i:], "```"):
			end, count, err := preBlock(s[i+3:])
			if err != nil {
				return n, fmt.Errorf("pre block at byte %d: %w", i, err)
			}
			n += count
			i += 3 + end + 3
			continue
		case r == '`':
			return n, fmt.Errorf("inline code at byte %d (herald's templates use pre blocks)", i)
		case r == '[':
			return n, fmt.Errorf("a link at byte %d", i)
		case r == '@' && !strings.HasPrefix(s[i+1:], "\u200b"):
			return n, fmt.Errorf("a bare @ at byte %d", i)
		case r == '*' || r == '~':
			open[string(r)] = !open[string(r)]
		case r == '_' && strings.HasPrefix(s[i:], "__"):
			open["__"] = !open["__"]
			size = 2
		case r == '_':
			open["_"] = !open["_"]
		case r == '|' && strings.HasPrefix(s[i:], "||"):
			open["||"] = !open["||"]
			size = 2
		case strings.ContainsRune(reserved, r):
			return n, fmt.Errorf("character %q at byte %d is reserved and must be escaped", r, i)
		default:
			n += utf16Len(r)
		}
		i += size
	}
	for e, o := range open {
		if o {
			return n, fmt.Errorf("entity %s is not closed", e)
		}
	}
	return n, nil
}

// preBlock reads a pre block's content up to its closing ```: inside, `
// and \ must be escaped. It returns the content's length in bytes and in
// characters (its first line names the language, and is not counted).
func preBlock(s string) (end, count int, err error) {
	start := strings.IndexByte(s, '\n') + 1
	if strings.ContainsAny(s[:start], "`\\") {
		return 0, 0, errors.New("a language line with a ` or \\")
	}
	for i := start; i < len(s); {
		switch {
		case s[i] == '\\':
			if i+1 >= len(s) || (s[i+1] != '`' && s[i+1] != '\\') {
				return 0, 0, errors.New("a backslash inside that escapes neither ` nor \\")
			}
			count++
			i += 2
		case strings.HasPrefix(s[i:], "```"):
			return i, count, nil
		case s[i] == '`':
			return 0, 0, errors.New("an unescaped ` inside")
		case s[i] == '@' && !strings.HasPrefix(s[i+1:], "\u200b"):
			return 0, 0, errors.New("a bare @ inside")
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			count += utf16Len(r)
			i += size
		}
	}
	return 0, 0, errors.New("not closed")
}

// TestTelegramEscapes: whatever the text, telegramText and telegramCode
// give MarkdownV2 that parses, with no more characters than asked for as
// Telegram counts them, the start of a text and the end of a log kept.
func TestTelegramEscapes(t *testing.T) {
	hostile := "a_b*c[d](e)~f`g>h#i+j-k=l|m{n}o.p!q\\r@channel ```\x00ü\xff€🔥😀"
	for _, n := range []int{1, 2, 10, 40, 100} {
		text := sinks.TelegramText(n, hostile)
		got, err := parseMarkdownV2(text)
		if err != nil || got > n {
			t.Errorf("telegramText %d: %q parses to %d characters, %v", n, text, got, err)
		}
		code := sinks.TelegramCode(n, hostile)
		got, err = parseMarkdownV2(code)
		if err != nil || got > n+1 { // +1: the newline before the closing fence
			t.Errorf("telegramCode %d: %q parses to %d characters, %v", n, code, got, err)
		}
	}
	if got := sinks.TelegramText(100, "1.5 (x) @here"); got != `1\.5 \(x\) @`+"\u200b"+`here` {
		t.Errorf("telegramText = %q", got)
	}
	if got := sinks.TelegramText(8, "0123456789"); got != "0123456…" {
		t.Errorf("a cut keeps the start: %q", got)
	}
	if got := sinks.TelegramCode(6, "line1\nline2"); got != "```\n…line2\n```" {
		t.Errorf("a cut log keeps its end: %q", got)
	}
}

// TestMarkdownV2Checker: the checker refuses what Telegram refuses, so
// that the template tests mean something.
func TestMarkdownV2Checker(t *testing.T) {
	for _, bad := range []string{"1.5", "a-b", "(x)", "*bold", "```\ncode", "```\na`b\n```", `a\`, "[x](https://evil)", "@channel", "\\ü"} {
		if _, err := parseMarkdownV2(bad); err == nil {
			t.Errorf("%q passed", bad)
		}
	}
	if n, err := parseMarkdownV2("*bold* \\. ```\nx\\`y\n```"); err != nil || n != 11 {
		t.Errorf("good MarkdownV2: %d characters, %v", n, err)
	}
}

// utf16Len is how many UTF-16 code units r takes.
func utf16Len(r rune) int {
	if r > 0xFFFF {
		return 2
	}
	return 1
}
