package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/internal/natstest"
	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

// Secrets a crashing program prints; none may leave herald.
var logSecrets = map[string]string{
	"password pair":  "hunter2-Pa55",
	"bearer token":   "abcDEF123.token-XYZ",
	"URL password":   "s3cr3t-in-url",
	"AWS key id":     "AKIAIOSFODNN7EXAMPLE",
	"AWS secret key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	"JWT":            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
	"private key":    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
	"user pattern":   "customer-48151623",
}

// crashLog is the crashed instance's log: 30 lines, the secrets among the
// last ones, the newest saying why it died.
func crashLog() []string {
	var lines []string
	for i := 1; i <= 22; i++ {
		lines = append(lines, fmt.Sprintf("2026-11-22T10:00:%02dZ INFO step %d", i, i))
	}
	return append(lines,
		"connecting to postgres://app:"+logSecrets["URL password"]+"@db:5432/shop",
		"config: password="+logSecrets["password pair"]+" user=app",
		"GET /api Authorization: Bearer "+logSecrets["bearer token"],
		"aws_access_key_id="+logSecrets["AWS key id"]+" aws_secret_access_key="+logSecrets["AWS secret key"],
		"session "+logSecrets["JWT"],
		"-----BEGIN PRIVATE KEY-----", logSecrets["private key"], "-----END PRIVATE KEY-----",
		"order for "+logSecrets["user pattern"]+" failed",
		"\x1b[31mFATAL\x1b[0m panic: cannot reach the database\x00",
	)
}

// fakeSlackAPI records chat.postMessage and chat.update bodies.
func fakeSlackAPI(t *testing.T) (*httptest.Server, func() string) {
	var mu sync.Mutex
	var got strings.Builder
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		got.WriteString(r.Form.Get("text") + "\n" + r.Form.Get("blocks") + "\n")
		mu.Unlock()
		fmt.Fprint(w, `{"ok":true,"channel":"C1","ts":"1700000000.000100"}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() string { mu.Lock(); defer mu.Unlock(); return got.String() }
}

// startCrashKubelet registers node-1 with a kubelet stand-in that
// answers the crashed instance's log (crashLog) and "starting again" for
// the current one; it stops when the test ends.
func startCrashKubelet(t *testing.T, client kubernetes.Interface) *testenv.Kubelet {
	t.Helper()
	kubelet, err := testenv.StartKubelet(context.Background(), client, "node-1", func(_ context.Context, r testenv.LogRequest) ([]string, int) {
		if !r.Previous {
			return []string{"starting again"}, http.StatusOK
		}
		return crashLog(), http.StatusOK
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kubelet.Close)
	return kubelet
}

func podOnNode(t *testing.T, client kubernetes.Interface, name, node string) {
	t.Helper()
	pod := newPod(name)
	pod.Spec.NodeName = node
	if _, err := client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func podEvent(t *testing.T, client kubernetes.Interface, pod, typ, reason, message string, count int32) {
	t.Helper()
	now := metav1.Now()
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{GenerateName: pod + "-", Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod},
		Type:           typ, Reason: reason, Message: message, Count: count, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "kubelet"}}
	if _, err := client.CoreV1().Events("default").Create(context.Background(), ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCrashContextEndToEnd: a crash-looping pod's firing, at a webhook and
// at Slack, carries the last 20 lines of the crashed container's log (the
// newest included, in order, escapes and NULs gone, secrets redacted), its
// Warning events first and a hint; the kubelet, reached through the API
// server's pods/log proxy, was asked for the previous instance with the
// tail and byte limits. No secret of the log reaches a sink (webhook,
// Slack, NATS), herald's log or its metrics.
func TestCrashContextEndToEnd(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	ctx := context.Background()
	kubelet := startCrashKubelet(t, client)
	recv := newReceiver(t)
	slackAPI, slackGot := fakeSlackAPI(t)
	bus := natstest.Start(t, t.TempDir(), 0)
	defer bus.Shutdown()
	nc, err := nats.Connect(bus.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	natsGot := make(chan []byte, 10)
	nc.Subscribe("herald.>", func(m *nats.Msg) { natsGot <- m.Data })
	nc.Flush()
	metrics := freeAddr(t)
	h := startedHerald(t, env, fmt.Sprintf(`
context:
  redact: ['customer-[0-9]+']
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, severity: critical, sinks: [hook, chat, bus]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
  - {name: chat, slack: {channel: "#alerts", apiURL: %q, token: {value: xoxb-test, allowPlaintext: true}, insecure: true}}
  - {name: bus, nats: {url: %q}}
`, recv.URL, slackAPI.URL+"/api/", bus.ClientURL()), "--metrics-addr", metrics, "--log-level", "debug")
	defer h.stop()

	podOnNode(t, client, "shop", "node-1")
	podEvent(t, client, "shop", "Normal", "Pulled", "Container image already present on machine", 4)
	podEvent(t, client, "shop", "Warning", "BackOff", "Back-off restarting failed container app in pod shop", 7)
	setStatus(t, client, "shop", crashLooping, 5)

	p := recv.next(t, 10*time.Second)
	if p.Transition != "firing" || p.Context == nil || p.Context.Logs == nil {
		t.Fatalf("firing without log context: %+v", p)
	}
	c := p.Context
	lines := c.Logs.Lines
	// The last 20 of 32 lines: steps 13-22, then ten more, of which the
	// three lines of the private key become one redacted line.
	if len(lines) != 18 || !c.Logs.Previous || c.Logs.Container != "app" || !c.Logs.Truncated {
		t.Errorf("logs: %d lines, previous %v, container %q, truncated %v; want the crashed app's last 20 (18 once redacted), truncated:\n%s",
			len(lines), c.Logs.Previous, c.Logs.Container, c.Logs.Truncated, strings.Join(lines, "\n"))
	}
	if last := lines[len(lines)-1]; last != "FATAL panic: cannot reach the database" {
		t.Errorf("newest line %q, want the FATAL line cleaned of escapes and NULs", last)
	}
	if !strings.HasSuffix(lines[0], "INFO step 13") || !strings.HasSuffix(lines[1], "INFO step 14") || lines[len(lines)-2] != "order for <redacted> failed" {
		t.Errorf("lines kept: %q, %q … %q; want steps 13 and 14 first, in order", lines[0], lines[1], lines[len(lines)-2])
	}
	if len(c.Events) != 2 || c.Events[0].Reason != "BackOff" || c.Events[0].Type != "Warning" || c.Events[0].Count != 7 {
		t.Errorf("events %+v, want the BackOff warning first (×7), then Pulled", c.Events)
	}
	if !strings.HasPrefix(c.Hint, "Exit code 1") || c.Node == nil || c.Node.Name != "node-1" || c.Unavailable != "" || c.Pod != "default/shop" {
		t.Errorf("hint %q, node %+v, unavailable %q, pod %q", c.Hint, c.Node, c.Unavailable, c.Pod)
	}
	reqs := kubelet.Requests()
	// One line more than kept, to know whether older ones were cut.
	if len(reqs) != 1 || !reqs[0].Previous || reqs[0].TailLines != 21 || reqs[0].LimitBytes != 4096*16 || reqs[0].Container != "app" || reqs[0].Pod != "shop" {
		t.Errorf("the kubelet was asked %+v, want one request for the previous app container, tailLines 21, limitBytes %d", reqs, 4096*16)
	}
	var slackText string
	err = waitFor(10*time.Second, func() bool { slackText = slackGot(); return strings.Contains(slackText, "cannot reach the database") })
	if err != nil {
		t.Fatalf("the Slack message has no log lines:\n%s", slackText)
	}
	for _, want := range []string{"Last log lines", "BackOff", "Exit code 1", "node-1"} {
		if !strings.Contains(slackText, want) {
			t.Errorf("the Slack message lacks %q", want)
		}
	}

	var natsPayload []byte
	select {
	case natsPayload = <-natsGot:
	case <-time.After(10 * time.Second):
		t.Fatal("no NATS message")
	}
	if !bytes.Contains(natsPayload, []byte("FATAL panic: cannot reach the database")) {
		t.Errorf("the NATS payload has no log lines:\n%s", natsPayload)
	}

	// herald test shows, live, the context the firing would carry.
	kc := t.TempDir() + "/kubeconfig"
	env.WriteKubeconfig(kc)
	var testOut, testErr bytes.Buffer
	if code := runMain(ctx, []string{"test", "-f", h.config, "--kubeconfig", kc}, &testOut, &testErr); code != 0 {
		t.Fatalf("herald test: exit %d: %s", code, testErr.String())
	}
	for _, want := range []string{"Pod default/shop: rule pod-crashloop FIRES", "hint:  Exit code 1", "| FATAL panic: cannot reach the database", "event: Warning BackOff ×7"} {
		if !strings.Contains(testOut.String(), want) {
			t.Errorf("herald test --kubeconfig lacks %q:\n%s", want, testOut.String())
		}
	}

	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metricsText, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metricsText), `herald_context_requests_total{kind="logs",result="ok"} 1`) {
		t.Errorf("no successful logs request counted:\n%s", grepLines(string(metricsText), "herald_context"))
	}
	h.stop()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(p)
	payload := buf.String()
	for what, secret := range logSecrets {
		for where, text := range map[string]string{"webhook payload": payload, "Slack": slackText, "NATS payload": string(natsPayload), "herald's log": h.logs.String(), "metrics": string(metricsText)} {
			if strings.Contains(text, secret) {
				t.Errorf("the %s appears in %s", what, where)
			}
		}
	}
	if !strings.Contains(payload, "password=<redacted>") || !strings.Contains(payload, "<redacted private key>") {
		t.Errorf("redacted lines do not say what was there:\n%v", lines)
	}
}

func waitFor(timeout time.Duration, cond func() bool) error {
	return wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true, func(context.Context) (bool, error) { return cond(), nil })
}

func grepLines(text, sub string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCrashContextFaults: whatever goes wrong with the context — the
// kubelet hangs, answers 500 or refuses connections, or herald may not
// read pods/log — the firing still goes out within the wait bound (2s)
// + 1s, with its events and hint, saying what is missing and why.
func TestCrashContextFaults(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	ctx := context.Background()
	var mode sync.Map // "mode" → "ok" | "hang" | "500"
	mode.Store("mode", "ok")
	kubelet, err := testenv.StartKubelet(ctx, client, "node-1", func(req context.Context, _ testenv.LogRequest) ([]string, int) {
		switch m, _ := mode.Load("mode"); m {
		case "hang": // until the API server gives up on it
			<-req.Done()
			return nil, http.StatusOK
		case "500":
			return nil, http.StatusInternalServerError
		}
		return []string{"fine"}, http.StatusOK
	})
	if err != nil {
		t.Fatal(err)
	}
	recv := newReceiver(t)
	cfg := fmt.Sprintf(`
rules:
  - {name: pod-crashloop, kind: Pod, detector: crashloop, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, recv.URL)
	crashWithin := func(t *testing.T, pod, want string) {
		t.Helper()
		podOnNode(t, client, pod, "node-1")
		podEvent(t, client, pod, "Warning", "BackOff", "Back-off restarting failed container", 2)
		start := time.Now()
		setStatus(t, client, pod, crashLooping, 3)
		p := recv.next(t, 10*time.Second)
		took := time.Since(start)
		if p.Transition != "firing" || p.Object.Name != pod {
			t.Fatalf("got %s for %s, want %s's firing", p.Transition, p.Object.Name, pod)
		}
		if took > 3*time.Second {
			t.Errorf("%s: the firing took %s, over the 2s wait + 1s", pod, took)
		}
		c := p.Context
		if c == nil || c.Logs != nil || !strings.Contains(c.Unavailable, want) || len(c.Events) != 1 || c.Hint == "" {
			t.Errorf("%s: context %+v, want events and hint, and %q", pod, c, want)
		}
		t.Logf("%s: firing after %s, %q", pod, took.Round(time.Millisecond), c.Unavailable)
	}

	h := startedHerald(t, env, cfg)
	for _, tt := range []struct{ mode, pod, want string }{
		{"hang", "hangs", "logs: no answer within 2s"},
		{"500", "fails", "logs: unavailable (500"},
		{"refused", "refused", "logs: unavailable (500"},
	} {
		if tt.mode == "refused" {
			kubelet.Close()
		} else {
			mode.Store("mode", tt.mode)
		}
		crashWithin(t, tt.pod, tt.want)
	}
	h.stop()

	// herald's identity may watch pods and list events, but not get
	// pods/log: one warning at start, and alerts that say so.
	kc := limitedKubeconfig(t, env)
	limited := *env
	limited.Config = kc
	h = startedHerald(t, &limited, cfg)
	defer h.stop()
	crashWithin(t, "forbidden", "logs: not permitted (herald's RBAC lacks get pods/log)")
	if n := strings.Count(h.logs.String(), "herald may not get pods/log"); n != 1 {
		t.Errorf("%d warnings about pods/log at start, want 1:\n%s", n, h.logs)
	}
}

// limitedKubeconfig is a ServiceAccount's client configuration with what
// herald needs to run (pods, namespaces, events, its lease and ledger in
// default) but not pods/log.
func limitedKubeconfig(t *testing.T, env *testenv.Env) *rest.Config {
	t.Helper()
	cfg, err := env.ServiceAccountConfig(context.Background(), "default", "no-logs", testenv.Permissions{
		Cluster: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods", "namespaces"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list"}},
		},
		Namespace: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestCrashContextStorm: 500 pods of 50 Deployments crash within 10 s, half
// of them under a rule with crash context, half without. Every firing and
// every paced update is delivered; the requests for logs stay within the
// budget (5 API requests a second, a burst of 10) however many crash; the
// first alerts' latency with context (bounded by its 2 s wait) is set
// beside the one without, from the same run.
func TestCrashContextStorm(t *testing.T) {
	alone(t) // it asserts latencies
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	ctx := context.Background()
	kubelet, err := testenv.StartKubelet(ctx, client, "node-1", func(context.Context, testenv.LogRequest) ([]string, int) {
		return []string{"starting", "panic: boom"}, http.StatusOK
	})
	if err != nil {
		t.Fatal(err)
	}
	defer kubelet.Close()
	recv := newReceiver(t)
	got := record(recv)
	createNamespaces(t, client, "with", "without")
	h := startedHerald(t, env, fmt.Sprintf(`
incidents: {updateInterval: 5s}
rules:
  - {name: with, kind: Pod, detector: crashloop, groupBy: workload, namespaces: {include: [with]}, sinks: [hook]}
  - {name: without, kind: Pod, detector: crashloop, groupBy: workload, context: {enabled: false}, namespaces: {include: [without]}, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}, queueSize: 2000}
`, recv.URL))
	defer h.stop()

	type workload struct{ ns, name string }
	pods := map[workload][]string{}
	order := map[workload]int{}
	for d := range 25 {
		for _, ns := range []string{"with", "without"} {
			w := workload{ns, fmt.Sprintf("svc%02d", d)}
			pods[w], order[w] = deploymentPodsOn(t, client, ns, w.name, 10, "node-1"), d
		}
	}
	var mu sync.Mutex
	firstCrash := map[workload]time.Time{}
	var wg sync.WaitGroup
	start := time.Now()
	for w, names := range pods {
		wg.Go(func() {
			time.Sleep(time.Duration(order[w]) * 350 * time.Millisecond) // the storm's schedule: 25 workloads in each namespace over ~9 s
			for i, p := range names {
				if i == 0 {
					mu.Lock()
					firstCrash[w] = time.Now()
					mu.Unlock()
				}
				if err := writePodStatusIn(client, w.ns, p, crashLooping, 2); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	crashed := time.Since(start)
	// 50 firings, then one update each (10/10 pods) once its 5 s are over.
	all := got.await(t, 100, 60*time.Second, func(sinks.Payload) bool { return true })
	if n := len(got.matching(func(p sinks.Payload) bool { return p.Transition == "firing" })); n != 50 {
		t.Errorf("%d firings, want 50", n)
	}
	latency := map[string][]time.Duration{}
	withLogs := 0
	for _, a := range all {
		if a.p.Transition != "firing" {
			continue
		}
		latency[a.p.Object.Namespace] = append(latency[a.p.Object.Namespace], a.at.Sub(firstCrash[workload{a.p.Object.Namespace, a.p.Object.Name}]))
		if a.p.Context != nil && a.p.Context.Logs != nil {
			withLogs++
		}
		if a.p.Object.Namespace == "without" && a.p.Context != nil {
			t.Errorf("%s: context under a rule that turned it off", a.p.Object.Name)
		}
	}
	for _, ns := range []string{"with", "without"} {
		l := latency[ns]
		slices.Sort(l)
		t.Logf("first alerts %s crash context: p50 %s, p99 %s (%d)", ns, l[len(l)/2], l[len(l)*99/100], len(l))
		if l[len(l)*99/100] > 3*time.Second {
			t.Errorf("%s context: p99 %s, over the 2s wait + 1s", ns, l[len(l)*99/100])
		}
	}
	requests := len(kubelet.Requests())
	budget := int(5*crashed.Seconds()) + 10
	t.Logf("storm of 500 pods in %s: %d of 25 firings with log lines, %d log requests (budget %d)", crashed.Round(time.Millisecond), withLogs, requests, budget)
	if requests > budget || requests == 0 || withLogs == 0 {
		t.Errorf("%d log requests, want between 1 and the budget %d", requests, budget)
	}
}
