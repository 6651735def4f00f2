package sinks

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscapes(t *testing.T) {
	for _, tt := range []struct{ in, slack, markdown, code string }{
		{"plain text 1.2", "plain text 1.2", "plain text 1.2", "```\nplain text 1.2\n```"},
		{"<!channel> <!here> <@U123> <#C1>", "&lt;!channel&gt; &lt;!here&gt; &lt;@U123&gt; &lt;#C1&gt;",
			`\<!channel\> \<!here\> \<@` + zwsp + `U123\> \<#C1\>`, "```\n<!channel> <!here> <@" + zwsp + "U123> <#C1>\n```"},
		{"<https://evil|click> &amp;", "&lt;https://evil|click&gt; &amp;amp;", `\<https://evil\|click\> &amp;`, "```\n<https://evil|click> &amp;\n```"},
		{"*bold* _it_ ~s~ `c` [link](http://x)", "*bold* _it_ ~s~ `c` [link](http://x)",
			`\*bold\* \_it\_ \~s\~ \` + "`c\\`" + ` \[link\](http://x)`, "```\n*bold* _it_ ~s~ `c` [link](http://x)\n```"},
		{"@everyone @here <users/all>", "@everyone @here &lt;users/all&gt;", "@" + zwsp + "everyone @" + zwsp + "here \\<users/all\\>", "```\n@" + zwsp + "everyone @" + zwsp + "here <users/all>\n```"},
		{"``` close\n# h\n- li\n  + li\n12. n\n> q\n||spoiler||", "``` close\n# h\n- li\n  + li\n12. n\n&gt; q\n||spoiler||",
			"\\`\\`\\` close\n\\# h\n\\- li\n  \\+ li\n12\\. n\n\\> q\n\\|\\|spoiler\\|\\|", "```\n''' close\n# h\n- li\n  + li\n12. n\n> q\n||spoiler||\n```"},
		{"a-b 3.5 x#y", "a-b 3.5 x#y", "a-b 3.5 x#y", "```\na-b 3.5 x#y\n```"},
	} {
		if got := SlackEscape(tt.in); got != tt.slack {
			t.Errorf("SlackEscape(%q) = %q, want %q", tt.in, got, tt.slack)
		}
		if got := MarkdownEscape(tt.in); got != tt.markdown {
			t.Errorf("MarkdownEscape(%q) = %q, want %q", tt.in, got, tt.markdown)
		}
		if got := CodeBlock(1000, tt.in); got != tt.code {
			t.Errorf("CodeBlock(%q) = %q, want %q", tt.in, got, tt.code)
		}
	}
}

// TestCodeBlockCut: a code block over its size loses the start of the
// text, after the escaping.
func TestCodeBlockCut(t *testing.T) {
	if got, want := CodeBlock(14, "line 1\n```@x"), "```\n…''@\u200bx\n```"; got != want {
		t.Errorf("CodeBlock = %q, want %q", got, want)
	}
}

// FuzzEscapes: whatever the text, Slack-escaped text has no < or > left,
// Markdown-escaped text has no metacharacter without its backslash and no
// @ a mention could follow, a code block holds no fence but its own, and
// every result is valid UTF-8.
func FuzzEscapes(f *testing.F) {
	f.Add("<!channel> *x* [a](b) @here ```")
	f.Add("\xff\\`\n- 1. #")
	f.Fuzz(func(t *testing.T, s string) {
		if got := SlackEscape(s); strings.ContainsAny(got, "<>") {
			t.Errorf("SlackEscape(%q) = %q", s, got)
		}
		md := MarkdownEscape(s)
		for i := 0; i < len(md); i++ {
			switch c := md[i]; {
			case c == '\\':
				i++ // an escape and what it escapes
			case strings.IndexByte("`*_~[]<>|", c) >= 0:
				t.Fatalf("MarkdownEscape(%q) = %q: %q at %d unescaped", s, md, c, i)
			case c == '@' && !strings.HasPrefix(md[i+1:], zwsp):
				t.Fatalf("MarkdownEscape(%q) = %q: a bare @ at %d", s, md, i)
			}
		}
		for _, max := range []int{9, 20, 1000} {
			code := CodeBlock(max, s)
			if strings.Count(code, "```") != 2 || !strings.HasPrefix(code, "```\n") || !strings.HasSuffix(code, "\n```") {
				t.Errorf("CodeBlock(%d, %q) = %q: a fence inside", max, s, code)
			}
			if n := utf8.RuneCountInString(code); n > max {
				t.Errorf("CodeBlock(%d, %q) has %d characters", max, s, n)
			}
		}
		if !utf8.ValidString(md) {
			t.Errorf("MarkdownEscape(%q) is not UTF-8", s)
		}
	})
}
