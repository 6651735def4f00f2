package config

import "fmt"

// Link is a link of the team's own put on an incident's messages: a
// dashboard, a log search, a wiki page. URL is a Go template filled from
// the incident (internal/links, docs/routing.md "Links").
type Link struct {
	// Name is the link's label: a Slack button's text, a Teams action's
	// title.
	Name string `yaml:"name"`
	URL  string `yaml:"url"`
}

// Bounds of a rule's or a route's links: Slack shows a button's text up
// to 75 characters, and a message's buttons in one row.
const (
	MaxLinks        = 5
	MaxLinkName     = 40
	MaxLinkTemplate = 2000
)

// validateLinks checks the shape of links at p (rules[0].links); the
// templates are compiled by internal/links, which says where they fail.
func validateLinks(p string, links []Link, add func(path, format string, args ...any)) {
	if len(links) > MaxLinks {
		add(p, "at most %d links (a message's row of buttons); got %d", MaxLinks, len(links))
	}
	seen := map[string]bool{}
	for i, l := range links {
		q := fmt.Sprintf("%s[%d]", p, i)
		switch {
		case l.Name == "":
			add(q+".name", "a link needs a name: its button's label, e.g. name: Logs")
		case len([]rune(l.Name)) > MaxLinkName:
			add(q+".name", "at most %d characters (a button's label); got %d", MaxLinkName, len([]rune(l.Name)))
		case seen[l.Name]:
			add(q+".name", "%q is the name of an earlier link here", l.Name)
		}
		seen[l.Name] = true
		switch {
		case l.URL == "":
			add(q+".url", "a link needs a url: an http:// or https:// address, a template of the incident's fields (docs/routing.md, Links)")
		case len(l.URL) > MaxLinkTemplate:
			add(q+".url", "at most %d bytes; got %d", MaxLinkTemplate, len(l.URL))
		}
	}
}
