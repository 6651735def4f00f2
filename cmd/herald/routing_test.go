package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/oncalltest"
)

// slackPost is one chat.postMessage the Slack stand-in accepted.
type slackPost struct {
	Channel, Text, Blocks string
	Digest                bool
}

// blockText is every text of a message's blocks, as Slack renders them
// (the JSON escapes < and >).
func blockText(raw string) string {
	var v any
	json.Unmarshal([]byte(raw), &v)
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		case string:
			out = append(out, v)
		}
	}
	walk(v)
	return strings.Join(out, "\n")
}

// slackChannels is a Slack Web API stand-in that keeps every message by
// channel, and refuses the channels in archived as Slack does.
type slackChannels struct {
	*httptest.Server
	mu       sync.Mutex
	posts    []slackPost
	archived map[string]bool
}

func newSlackChannels(t *testing.T, archived ...string) *slackChannels {
	s := &slackChannels{archived: map[string]bool{}}
	for _, ch := range archived {
		s.archived[ch] = true
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.Header.Get("Authorization") != "Bearer xoxb-routing-test" && r.Form.Get("token") != "xoxb-routing-test" {
			fmt.Fprint(w, `{"ok":false,"error":"invalid_auth"}`)
			return
		}
		ch := r.Form.Get("channel")
		if strings.HasSuffix(r.URL.Path, "/chat.postMessage") && s.archived[ch] {
			fmt.Fprint(w, `{"ok":false,"error":"is_archived"}`)
			return
		}
		var meta struct {
			Payload struct {
				Transition string `json:"transition"`
			} `json:"event_payload"`
		}
		json.Unmarshal([]byte(r.Form.Get("metadata")), &meta)
		s.mu.Lock()
		if strings.HasSuffix(r.URL.Path, "/chat.postMessage") && r.Form.Get("thread_ts") == "" {
			s.posts = append(s.posts, slackPost{Channel: ch, Text: r.Form.Get("text"), Blocks: blockText(r.Form.Get("blocks")), Digest: meta.Payload.Transition == "digest"})
		}
		n := len(s.posts)
		s.mu.Unlock()
		fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":"1700000000.%06d"}`, ch, n)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *slackChannels) all() []slackPost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]slackPost(nil), s.posts...)
}

// TestRoutingByTeam: three namespaces owned by two teams — one by a
// namespace label, two by the herald.io/team annotation on the
// namespace — and a pod in an unowned namespace naming its team, with
// crashes in each; a pod's claim to another team than its namespace's
// is not followed. Each
// team's alerts reach only its own Slack channel (with its mention), its
// own PagerDuty service and its own Teams channel; an archived channel's
// alert reaches the default channel saying why; and a storm under
// Slack's rate limit goes out as one digest per team, not one for all.
func TestRoutingByTeam(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	ctx := context.Background()
	slack := newSlackChannels(t, "#ops-archived")
	pd := oncalltest.NewPagerDuty(t)
	teamsPay, teamsSearch, teamsDefault := oncalltest.NewTeams(t), oncalltest.NewTeams(t), oncalltest.NewTeams(t)
	const payKey, defaultKey = "paypaypaypaypaypaypaypaypaypaypa", "defaultdefaultdefaultdefaultdefa"
	cfg := fmt.Sprintf(`
clusterName: e2e
incidents: {updateInterval: 1h}
rules:
  - {name: crash, kind: Pod, detector: crashloop, severity: critical, sinks: [slack, teams]}
sinks:
  - name: slack
    rateLimit: 1
    slack: {token: {value: xoxb-routing-test, allowPlaintext: true}, channel: "#alerts", apiURL: %q, insecure: true}
  - name: pd
    pagerduty:
      url: %q
      routingKey: {value: %s, allowPlaintext: true}
      destinations: {payments: {routingKey: {value: %s, allowPlaintext: true}}}
  - name: teams
    teams:
      url: %q
      destinations: {payments: {url: %q}, search: {url: %q}}
routes:
  - name: payments
    match: {namespaceLabels: "team=payments"}
    to: &pay
      - {sink: slack, channel: "#payments", mention: [S0PAYMENTS1]}
      - {sink: pd, destination: payments}
      - {sink: teams, destination: payments}
  - name: payments-owned
    match: {teams: [payments]}
    to: *pay
  - name: search
    match: {teams: [search]}
    to:
      - {sink: slack, channel: "#search", mention: [U0SEARCHER1]}
      - {sink: teams, destination: search}
  - name: ops
    match: {teams: [ops]}
    to: [{sink: slack, channel: "#ops-archived"}]
`, slack.URL, pd.URL, defaultKey, payKey, teamsDefault.URL, teamsPay.URL, teamsSearch.URL)

	for _, ns := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: "pay-web", Labels: map[string]string{"team": "payments"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "pay-batch", Annotations: map[string]string{"herald.io/team": "payments"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "search", Annotations: map[string]string{"herald.io/team": "search"}}},
	} {
		if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	metricsAddr := freeAddr(t)
	h := startedHerald(t, env, cfg, "--metrics-addr", metricsAddr)
	defer h.stop()

	crash := func(ns, name string, annotations map[string]string) {
		t.Helper()
		pod := newPod(name)
		pod.Namespace, pod.Annotations = ns, annotations
		if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setStatusIn(t, client, ns, name, crashLooping, 3)
	}
	// pay-2 claims to be search's, in a namespace payments owns: the
	// namespace's team decides, so payments hears, not search.
	crash("pay-web", "pay-1", nil)
	crash("pay-batch", "pay-2", map[string]string{"herald.io/team": "search"})
	crash("search", "search-1", nil)
	crash("default", "ops-1", map[string]string{"herald.io/team": "ops"})
	crash("default", "nobody-1", nil)

	if err := waitFor(30*time.Second, func() bool { return len(slack.all()) >= 5 }); err != nil {
		t.Fatalf("Slack messages for all five pods: %d posts %+v\n%s", len(slack.all()), slack.all(), grepLines(h.logs.String(), "level=WARN")+grepLines(h.logs.String(), "level=ERROR"))
	}
	waitUntil(t, "PagerDuty events for both payments pods", func() bool { return len(pd.Events()) >= 2 })
	waitUntil(t, "Teams cards", func() bool {
		return len(teamsPay.Cards()) >= 2 && len(teamsSearch.Cards()) >= 1 && len(teamsDefault.Cards()) >= 1
	})

	where := map[string]slackPost{}
	for _, p := range slack.all() {
		for _, pod := range []string{"pay-1", "pay-2", "search-1", "ops-1", "nobody-1"} {
			if strings.Contains(p.Text+p.Blocks, pod) {
				if prev, ok := where[pod]; ok && prev.Channel != p.Channel {
					t.Errorf("%s reached both %s and %s", pod, prev.Channel, p.Channel)
				}
				where[pod] = p
			}
		}
	}
	for pod, want := range map[string]struct{ channel, mention string }{
		"pay-1":    {"#payments", "<!subteam^S0PAYMENTS1>"},
		"pay-2":    {"#payments", "<!subteam^S0PAYMENTS1>"},
		"search-1": {"#search", "<@U0SEARCHER1>"},
		"ops-1":    {"#alerts", "Meant for #ops-archived"},
		"nobody-1": {"#alerts", ""},
	} {
		p := where[pod]
		if p.Channel != want.channel {
			t.Errorf("%s: Slack channel %q, want %q", pod, p.Channel, want.channel)
		}
		if want.mention != "" && !strings.Contains(p.Text+p.Blocks, want.mention) {
			t.Errorf("%s: the message does not carry %q:\n%s\n%s", pod, want.mention, p.Text, p.Blocks)
		}
		if strings.Contains(p.Text+p.Blocks, "<!subteam^") != strings.HasPrefix(pod, "pay-") {
			t.Errorf("%s: a payments mention where it does not belong (or none where it does)", pod)
		}
	}

	for _, e := range pd.Events() {
		if e.RoutingKey != payKey {
			t.Errorf("PagerDuty got an event with routing key %q..., want payments' only", e.RoutingKey[:4])
		}
		if e.Payload != nil && !strings.Contains(e.Payload.Summary+e.DedupKey, "pay-") && !strings.Contains(fmt.Sprint(e.Payload.CustomDetails), "pay-") {
			t.Errorf("PagerDuty got an event not about a payments pod: %+v", e.Payload)
		}
	}
	cardsMention := func(cards []map[string]any, pods ...string) {
		t.Helper()
		for _, c := range cards {
			b, _ := json.Marshal(c)
			ok := false
			for _, p := range pods {
				ok = ok || strings.Contains(string(b), p)
			}
			if !ok {
				t.Errorf("a Teams card reached the wrong channel (want one of %v): %.300s", pods, b)
			}
		}
	}
	cardsMention(teamsPay.Cards(), "pay-1", "pay-2")
	cardsMention(teamsSearch.Cards(), "search-1")
	cardsMention(teamsDefault.Cards(), "nobody-1") // ops-1's route names Slack only
	if n := metricValue(t, metricsAddr, `herald_sink_misrouted_total{reason="is_archived",sink="slack"}`); n != 1 {
		t.Errorf("herald_sink_misrouted_total for the archived channel = %v, want 1", n)
	}

	// A storm: 12 crashes for each team at once, under Slack's rate of 1
	// per second, goes out as digests — each team's in its own channel.
	before := len(slack.all())
	var wg sync.WaitGroup
	for i := range 12 {
		for _, ns := range []string{"pay-web", "search"} {
			wg.Go(func() { stormPod(t, client, ns, fmt.Sprintf("%s-storm-%d", ns, i)) })
		}
	}
	wg.Wait()
	digests := map[string]int{}
	waitUntil(t, "a digest in each team's channel", func() bool {
		for _, p := range slack.all()[before:] {
			if p.Digest {
				digests[p.Channel]++
			}
		}
		return digests["#payments"] > 0 && digests["#search"] > 0
	})
	for _, p := range slack.all()[before:] {
		other := map[string]string{"#payments": "search-storm", "#search": "pay-web-storm"}[p.Channel]
		if other == "" || strings.Contains(p.Text+p.Blocks, other) {
			t.Errorf("storm message in %s carries another team's pods (or went to no team): %.300s", p.Channel, p.Text+p.Blocks)
		}
	}
}

// stormPod creates a crash-looping pod in ns (for use in goroutines).
func stormPod(t *testing.T, client kubernetes.Interface, ns, name string) {
	pod := newPod(name)
	pod.Namespace = ns
	if _, err := client.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Error(err)
		return
	}
	if err := writePodStatusIn(client, ns, name, crashLooping, 3); err != nil {
		t.Error(err)
	}
}

// waitUntil polls cond for up to 30 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if err := waitFor(30*time.Second, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
