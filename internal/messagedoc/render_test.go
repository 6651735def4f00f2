package messagedoc

import (
	"encoding/json"
	"regexp"
	"strings"
)

// What a person sees of a message: herald's markup turned into what the
// chat tool shows (emoji, mentions, link labels, code as indented
// lines), and the escaping that kept cluster text inert undone, since it
// shows nothing either.

var slackEmoji = strings.NewReplacer(
	":red_circle:", "🔴", ":large_orange_circle:", "🟠", ":large_blue_circle:", "🔵", ":white_check_mark:", "✅",
	":mute:", "🔇", ":loud_sound:", "🔊", ":arrows_counterclockwise:", "🔄", ":repeat:", "🔁", ":bulb:", "💡",
	":warning:", "⚠️", ":small_blue_diamond:", "🔹", ":book:", "📖", ":link:", "🔗", ":grey_question:", "❔",
	":raised_hand:", "✋",
)

var (
	slackGroup = regexp.MustCompile(`<!subteam\^([A-Z0-9]+)>`)
	slackUser  = regexp.MustCompile(`<@([A-Z0-9]+)>`)
	slackLink  = regexp.MustCompile(`<[^<>|]+\|([^<>]+)>`)
	// Slack makes *text* bold only when the text starts and ends with
	// something other than a space: the asterisks of a cron schedule
	// ("0 * * * *") stay as they are.
	slackBold = regexp.MustCompile(`\*([^*\s](?:[^*\n]*[^*\s])?)\*`)
)

// slackSeen is a mrkdwn text as Slack shows it.
func slackSeen(s string) string {
	s = slackEmoji.Replace(s)
	s = slackGroup.ReplaceAllString(s, "@$1 (group)")
	s = slackUser.ReplaceAllString(s, "@$1")
	s = slackLink.ReplaceAllString(s, "[$1]")
	s = slackBold.ReplaceAllString(s, "$1")
	s = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
	return code(s, "```")
}

// code shows each fenced block's lines behind a bar, and inline code
// without its backticks.
func code(s, fence string) string {
	parts := strings.Split(s, fence)
	var b strings.Builder
	for i, p := range parts {
		if i%2 == 0 {
			b.WriteString(strings.ReplaceAll(p, "`", ""))
			continue
		}
		for _, l := range strings.Split(strings.Trim(p, "\n"), "\n") {
			b.WriteString("\n  │ " + l)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(strings.ReplaceAll(b.String(), "\n\n", "\n"), "\n")
}

// slackMessage is a message's blocks, top to bottom.
func slackMessage(blocks any) string {
	raw, _ := json.Marshal(blocks)
	var bs []struct {
		Type     string
		Text     *struct{ Text string }
		Fields   []struct{ Text string }
		Elements []struct {
			Type string
			Text json.RawMessage // a context's mrkdwn, or a button's plain_text object
		}
	}
	json.Unmarshal(raw, &bs)
	var lines []string
	for _, b := range bs {
		switch {
		case b.Type == "header":
			lines = append(lines, "▌ "+slackEmoji.Replace(b.Text.Text))
		case b.Text != nil:
			lines = append(lines, slackSeen(b.Text.Text))
		case len(b.Fields) > 0:
			var fs []string
			for _, f := range b.Fields {
				title, value, _ := strings.Cut(f.Text, "\n")
				fs = append(fs, slackSeen(title)+": "+slackSeen(value))
			}
			lines = append(lines, strings.Join(fs, " │ "))
		case b.Type == "actions":
			var buttons []string
			for _, e := range b.Elements {
				var label struct{ Text string }
				json.Unmarshal(e.Text, &label)
				buttons = append(buttons, "[ "+label.Text+" ]")
			}
			lines = append(lines, strings.Join(buttons, " "))
		default:
			for _, e := range b.Elements {
				var text string
				json.Unmarshal(e.Text, &text)
				lines = append(lines, slackSeen(text))
			}
		}
	}
	return strings.Join(lines, "\n")
}

var markdownEscape = regexp.MustCompile(`\\([\\` + "`" + `*_~\[\]<>|#+=.)-])`)

// teamsSeen is an Adaptive Card's Markdown as Teams shows it.
func teamsSeen(s string) string {
	return strings.ReplaceAll(markdownEscape.ReplaceAllString(s, "$1"), "\u200b", "")
}

// teamsMessage is a Workflows message's card, top to bottom.
func teamsMessage(body []byte) (summary, card string) {
	var m struct {
		Summary     string
		Attachments []struct {
			Content struct {
				Body []struct {
					Type, Text, FontType, Weight string
					Separator                    bool
					Facts                        []struct{ Title, Value string }
				}
				Actions []struct{ Title string }
			}
		}
	}
	json.Unmarshal(body, &m)
	c := m.Attachments[0].Content
	var lines []string
	for _, b := range c.Body {
		if b.Separator {
			lines = append(lines, "────")
		}
		switch {
		case b.Type == "FactSet":
			for _, f := range b.Facts {
				lines = append(lines, teamsSeen(f.Title)+"  "+teamsSeen(f.Value))
			}
		case b.FontType == "Monospace":
			for _, l := range strings.Split(b.Text, "\n") {
				lines = append(lines, "  │ "+teamsSeen(l))
			}
		case b.Weight == "Bolder" && len(lines) == 0:
			lines = append(lines, "▌ "+teamsSeen(b.Text))
		default:
			lines = append(lines, teamsSeen(b.Text))
		}
	}
	for _, a := range c.Actions {
		lines = append(lines, "[ "+a.Title+" ]")
	}
	return teamsSeen(m.Summary), strings.Join(lines, "\n")
}
