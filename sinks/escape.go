package sinks

import (
	"strings"
	"unicode/utf8"
)

// Escaping for the chat formats, late, at the sink (docs/architecture.md,
// "Text from the cluster"): a title, a message or a log line is written by whoever runs the
// pod, and must not mention, link or format in the channel it reaches.
// Each integration escapes for its own format; webhook body templates get
// these as functions (slackEscape, markdownEscape, codeBlock).

// SlackEscape writes &, < and > as the entities Slack's mrkdwn wants, so
// nothing in s is a control sequence: no <!channel>, <!here>, <@U123>,
// <#C123> or <https://evil|click here>. Google Chat's text format shares
// the grammar (<users/all>, <url|text>).
func SlackEscape(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s // most text: no copy (a Replacer made per call cost 50 µs a message)
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// zwsp (a zero-width space) after an @ keeps chat tools that mention by
// plain text (@everyone, @here, @channel, @all, @someone in Discord,
// Mattermost, Rocket.Chat, Teams) from seeing a mention; it shows nothing.
const zwsp = "\u200b"

// MarkdownEscape keeps Markdown (CommonMark and the chat tools' dialects:
// Discord, Mattermost, Rocket.Chat, Teams' Adaptive Cards) in s from
// formatting: every character that opens emphasis, code, a link or an
// image ([), a spoiler or table (|), an HTML tag or autolink (<) gets a
// backslash, and so do list, quote and heading markers at the start of a
// line; every @ is followed by a zero-width space so that no plain-text
// mention is seen. Backslash escapes are CommonMark's, which these tools
// follow; the text reads the same once rendered.
func MarkdownEscape(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	lineStart := true
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case strings.ContainsRune("\\`*_~[]<>|", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '@':
			b.WriteString("@" + zwsp)
		case lineStart && (r == '-' || r == '+' || r == '=' || r == '#'):
			b.WriteByte('\\')
			b.WriteRune(r)
		case lineStart && r >= '0' && r <= '9':
			// "1. " and "1) " start an ordered list: escape the mark.
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			b.WriteString(s[i:j])
			if j < len(s) && (s[j] == '.' || s[j] == ')') {
				b.WriteByte('\\')
				b.WriteByte(s[j])
				j++
			}
			i, lineStart = j, false
			continue
		case (r == ' ' || r == '\t') && lineStart:
			b.WriteRune(r)
			i += size
			continue // a marker may follow indentation
		default:
			b.WriteRune(r)
		}
		lineStart = r == '\n' || r == '\r'
		i += size
	}
	return b.String()
}

// Unfence keeps s from closing a ``` code block it is put in: every run of
// three backticks becomes three quotes.
func Unfence(s string) string { return strings.ReplaceAll(s, "```", "'''") }

// CodeBlock is s as a fenced code block that s cannot close, its @s
// followed by a zero-width space (a tool may see mentions in code too),
// of at most max characters with the fences: a longer s loses its start
// (in a log tail the last lines say why). The cut comes after the
// escaping, which only substitutes, so it cannot undo it.
func CodeBlock(max int, s string) string {
	const fences = len("```\n\n```")
	body := strings.ReplaceAll(Unfence(s), "@", "@"+zwsp)
	return "```\n" + TruncateEnd(max-fences, body) + "\n```"
}
