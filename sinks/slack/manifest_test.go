package slack

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/herald-k8s/herald/internal/incident"
)

// methodScopes are the bot scopes Slack's Web API asks of the methods the
// sink may call.
var methodScopes = map[string]string{
	"chat.postMessage": "chat:write",
	"chat.update":      "chat:write",
}

// TestAppManifestScopes: the Slack app manifest docs/slack.md installs
// asks for the scopes of the Web API methods the sink calls over an
// incident's life and a digest — every one of them, and nothing else.
func TestAppManifestScopes(t *testing.T) {
	api := newFakeSlack(t)
	target, _ := url.Parse(api.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var mu sync.Mutex
	called := map[string]bool{}
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		called[strings.TrimPrefix(r.URL.Path, "/")] = true
		mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	defer rec.Close()
	s := New(Options{Name: "slack", Token: "xoxb-test-token", Channel: "#alerts", APIURL: rec.URL, Refs: &refs{m: map[string]string{}}})
	ctx := context.Background()
	for _, n := range []incident.Notification{note(incident.Firing, 1, "3"), note(incident.Updated, 2, "8"), note(incident.Resolved, 3, "8")} {
		if err := s.Send(ctx, n); err != nil {
			t.Fatalf("%s: %v", n.Transition, err)
		}
	}
	if err := s.SendBatch(ctx, []incident.Notification{note(incident.Firing, 1, "3")}); err != nil {
		t.Fatal(err)
	}

	var need []string
	for method := range called {
		scope, ok := methodScopes[method]
		if !ok {
			t.Errorf("the sink called %s: add its scope to methodScopes and docs/slack-app-manifest.yaml", method)
			continue
		}
		if !slices.Contains(need, scope) {
			need = append(need, scope)
		}
	}
	slices.Sort(need)
	// The app for alerts only asks for exactly what the sink needs, and
	// turns nothing else on.
	alerts := readManifest(t, "../../docs/slack-app-manifest-alerts.yaml")
	if got := slices.Sorted(slices.Values(alerts.OAuth.Scopes.Bot)); !slices.Equal(got, need) || len(alerts.OAuth.Scopes.User) > 0 ||
		alerts.Settings.Interactivity.IsEnabled || alerts.Settings.SocketMode {
		t.Errorf("the alerts-only manifest asks for bot scopes %v (user %v), interactivity %v, Socket Mode %v; the sink needs %v and nothing else",
			got, alerts.OAuth.Scopes.User, alerts.Settings.Interactivity.IsEnabled, alerts.Settings.SocketMode, need)
	}
	manifest := readManifest(t, "../../docs/slack-app-manifest.yaml")
	// The buttons' receiver (internal/slackact) also reads user groups'
	// members, for allow lists that name a group (usergroups.users.list);
	// its other calls (chat.postMessage, chat.postEphemeral) need
	// chat:write.
	need = append(need, "usergroups:read")
	slices.Sort(need)
	got := slices.Sorted(slices.Values(manifest.OAuth.Scopes.Bot))
	if !slices.Equal(got, need) || len(manifest.OAuth.Scopes.User) > 0 {
		t.Errorf("the manifest asks for bot scopes %v (user %v); the sink calls %v, which need %v", got, manifest.OAuth.Scopes.User, called, need)
	}
}

// appManifest is what the tests read of a Slack app manifest.
type appManifest struct {
	OAuth struct {
		Scopes struct {
			Bot  []string `yaml:"bot"`
			User []string `yaml:"user"`
		} `yaml:"scopes"`
	} `yaml:"oauth_config"`
	Settings struct {
		Interactivity struct {
			IsEnabled bool `yaml:"is_enabled"`
		} `yaml:"interactivity"`
		SocketMode bool `yaml:"socket_mode_enabled"`
	} `yaml:"settings"`
}

func readManifest(t *testing.T, path string) appManifest {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m appManifest
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}
