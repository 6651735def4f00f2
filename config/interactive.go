package config

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Interactive turns a Slack sink's messages into something to act on:
// buttons (Silence, Acknowledge, More logs, Unsilence) whose presses reach
// herald over Slack's Socket Mode, a WebSocket herald opens to Slack, so
// nothing of herald is exposed to the internet. Off unless set.
type Interactive struct {
	// AppToken is the Slack app's app-level token (xapp-…, scope
	// connections:write), from a file or the environment.
	AppToken *SecretRef `yaml:"appToken"`
	// Allow says who may press what: the first entry whose namespaces
	// and routes match the incident decides. Without one that matches,
	// anyone in the channel may acknowledge and ask for more logs, and
	// nobody may silence or unsilence (DefaultAllow).
	Allow []AllowRule `yaml:"allow"`
}

// AllowRule is one entry of interactive.allow. Each list is of Slack
// user IDs (U…, W…) and user group IDs (S…), or "*" for anyone in the
// channel; an empty list allows nobody, an absent one keeps the default.
type AllowRule struct {
	// Namespaces are globs on the incident's namespace ("" for a
	// cluster-scoped object is matched by "*" only); none: any.
	Namespaces []string `yaml:"namespaces"`
	// Routes are names of routes (routes[].name); none: any.
	Routes []string `yaml:"routes"`

	Silence     *[]string `yaml:"silence"`
	Acknowledge *[]string `yaml:"acknowledge"`
	MoreLogs    *[]string `yaml:"moreLogs"`
}

// DefaultAllow is who may press what when no allow entry says: anyone
// may acknowledge and read more logs (the channel's members already see
// the alert); silencing mutes people, so it must be granted.
var DefaultAllow = map[string][]string{"acknowledge": {"*"}, "moreLogs": {"*"}, "silence": nil}

// slackPrincipal is a user (U…, W…) or user group (S…) ID.
var slackPrincipal = regexp.MustCompile(`^[SUW][A-Z0-9]{2,20}$`)

// appTokenShape is an app-level token: xapp-<version>-<app>-<n>-<hex>.
var appTokenShape = regexp.MustCompile(`^xapp-[0-9]+-[A-Z0-9]+-[0-9]+-[a-f0-9]+$`)

// validateInteractive checks a Slack sink's interactive block at p
// (sinks[i].slack.interactive).
func (c *Config) validateInteractive(p string, sl *SlackSink, add func(string, string, ...any)) {
	in := sl.Interactive
	if in == nil {
		return
	}
	if sl.Token == nil {
		add(p, "buttons need a bot token (token:), to edit the message a press acts on; an incoming webhook cannot")
	}
	if in.AppToken == nil {
		add(p, "interactive needs appToken: the Slack app's app-level token (xapp-…, scope connections:write), e.g. appToken: {file: /etc/herald/slack/app-token}")
	} else {
		c.resolveSecret(p+".appToken", in.AppToken, add)
		if v := in.AppToken.resolved.Reveal(); v != "" {
			switch {
			case c.offline:
			case strings.HasPrefix(v, "xoxb-") || strings.HasPrefix(v, "xoxp-"):
				add(p+".appToken", "this is a bot or user token (xox…); Socket Mode needs the app-level token (xapp-…) from the app's Basic Information page")
			case !appTokenShape.MatchString(v):
				add(p+".appToken", "not an app-level token: it should look like xapp-1-A0…-…-… (the value is not shown)")
			}
		}
	}
	routes := map[string]bool{}
	for _, r := range c.Routes {
		routes[r.Name] = true
	}
	for i, a := range in.Allow {
		ap := fmt.Sprintf("%s.allow[%d]", p, i)
		for j, g := range a.Namespaces {
			if err := checkGlob(g); err != "" {
				add(fmt.Sprintf("%s.namespaces[%d]", ap, j), "bad pattern %q: %s", g, err)
			}
		}
		for j, r := range a.Routes {
			if !routes[r] {
				add(fmt.Sprintf("%s.routes[%d]", ap, j), "no route is named %q (routes[].name)", r)
			}
		}
		if a.Silence == nil && a.Acknowledge == nil && a.MoreLogs == nil {
			add(ap, "an allow entry must say who may do something: silence, acknowledge or moreLogs (a list of Slack user or group IDs, or \"*\")")
		}
		for field, ids := range map[string]*[]string{"silence": a.Silence, "acknowledge": a.Acknowledge, "moreLogs": a.MoreLogs} {
			if ids == nil {
				continue
			}
			for j, id := range *ids {
				if id != "*" && !slackPrincipal.MatchString(id) {
					add(fmt.Sprintf("%s.%s[%d]", ap, field, j), "%q is not a Slack user ID (U…, W…) or user group ID (S…), nor \"*\": use IDs, not names (a name can change hands; in Slack, a profile's ⋮ menu → Copy member ID)", id)
				}
			}
		}
	}
}

// Allowed is who may do action ("silence", "acknowledge", "moreLogs") on
// an incident in namespace through route ("" when no route matched): Slack
// user and group IDs, or "*" for anyone.
func (in *Interactive) Allowed(action, namespace, route string) []string {
	globMatch := func(g, s string) bool { ok, _ := path.Match(g, s); return ok }
	for _, a := range in.Allow {
		if len(a.Namespaces) > 0 && !slices.ContainsFunc(a.Namespaces, func(g string) bool { return globMatch(g, namespace) }) {
			continue
		}
		if len(a.Routes) > 0 && !slices.Contains(a.Routes, route) {
			continue
		}
		var ids *[]string
		switch action {
		case "silence":
			ids = a.Silence
		case "acknowledge":
			ids = a.Acknowledge
		case "moreLogs":
			ids = a.MoreLogs
		}
		if ids != nil {
			return *ids
		}
		return DefaultAllow[action] // the entry that matched leaves this action to the default
	}
	return DefaultAllow[action]
}
