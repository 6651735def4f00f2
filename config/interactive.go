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
		add(p, "interactive needs appToken: the Slack app's app-level token (xapp-…, scope connections:write), e.g. appToken: {file: /var/run/secrets/herald/slack-interactive/app-token} (the chart: slack.interactive.existingSecret)")
	} else {
		c.resolveSecret(p+".appToken", in.AppToken, add)
		if v := in.AppToken.resolved.Reveal(); v != "" {
			switch {
			case c.unread(p + ".appToken"):
			case strings.HasPrefix(v, "xoxb-") || strings.HasPrefix(v, "xoxp-"):
				add(p+".appToken", "this is a bot or user token (xox…); Socket Mode needs the app-level token (xapp-…) from the app's Basic Information page")
			case !appTokenShape.MatchString(v):
				add(p+".appToken", "not an app-level token: it should look like xapp-1-A0…-…-… (the value is not shown)")
			}
		}
	}
	// One Slack app, one receiver: Slack hands each press to any one of
	// an app's connections, so two sinks (or two clusters) sharing an app
	// would each get presses meant for the other.
	if in.AppToken != nil && (in.AppToken.File != "" || in.AppToken.Env != "") {
		// Offline too: the same file or variable is the same app.
		for _, other := range c.Sinks {
			o := other.Slack.InteractiveOrNil()
			if o != nil && o != in && o.AppToken != nil && o.AppToken.File == in.AppToken.File && o.AppToken.Env == in.AppToken.Env {
				add(p+".appToken", "sink %s reads the same app-level token (%s): Slack would hand each press to either; give each Slack sink with buttons its own Slack app", other.Name, in.AppToken.String())
				break
			}
		}
	}
	if in.AppToken != nil {
		if v := in.AppToken.resolved.Reveal(); v != "" {
			for _, other := range c.Sinks {
				o := other.Slack.InteractiveOrNil()
				if o != nil && o != in && o.AppToken != nil && o.AppToken.resolved.Reveal() == v {
					add(p+".appToken", "sink %s uses the same Slack app (the same app-level token): Slack would hand each press to either; give each Slack sink with buttons its own Slack app", other.Name)
					break
				}
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
					add(fmt.Sprintf("%s.%s[%d]", ap, field, j), "%q is not a Slack user ID (U…, W…) or user group ID (S…), nor \"*\": %s", id, principalHint(id))
				}
			}
		}
	}
}

// Allowed is who may do action ("silence", "acknowledge", "moreLogs") on
// an incident in namespace sent through routes (several when a route has
// continue: true; none when no route matched): Slack user and group IDs,
// or "*" for anyone. An entry keyed on routes matches an incident that
// any of them sent.
func (in *Interactive) Allowed(action, namespace string, routes []string) []string {
	globMatch := func(g, s string) bool { ok, _ := path.Match(g, s); return ok }
	for _, a := range in.Allow {
		if len(a.Namespaces) > 0 && !slices.ContainsFunc(a.Namespaces, func(g string) bool { return globMatch(g, namespace) }) {
			continue
		}
		if len(a.Routes) > 0 && !slices.ContainsFunc(a.Routes, func(r string) bool { return slices.Contains(routes, r) }) {
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

// SilenceGranted says some allow entry lets someone silence: without
// one, messages carry no Silence buttons (every press would be refused).
func (in *Interactive) SilenceGranted() bool {
	for _, a := range in.Allow {
		if a.Silence != nil && len(*a.Silence) > 0 {
			return true
		}
	}
	return false
}

// AnyoneMaySilence says an allow entry lets anyone in the channel
// silence ("*").
func (in *Interactive) AnyoneMaySilence() bool {
	for _, a := range in.Allow {
		if a.Silence != nil && slices.Contains(*a.Silence, "*") {
			return true
		}
	}
	return false
}

// InteractiveOrNil is s's interactive block (nil: no buttons, or s is
// nil).
func (s *SlackSink) InteractiveOrNil() *Interactive {
	if s == nil {
		return nil
	}
	return s.Interactive
}

// principalHint says how to turn what was written into an ID.
func principalHint(id string) string {
	bare := strings.Trim(id, "<@!>")
	bare = strings.TrimPrefix(bare, "subteam^")
	switch {
	case bare != id && slackPrincipal.MatchString(bare):
		return "write the bare ID, " + bare + ", not Slack's mention markup"
	case slackPrincipal.MatchString(strings.ToUpper(id)):
		return "IDs are upper case: " + strings.ToUpper(id)
	case strings.HasPrefix(id, "C") || strings.HasPrefix(id, "G") || strings.HasPrefix(id, "D"):
		return "that looks like a channel ID; allow lists name people (U…) and user groups (S…)"
	}
	return "use IDs, not names (a name can change hands): a member's profile ⋮ menu → Copy member ID; a user group's ID is in its URL or from usergroups.list"
}
