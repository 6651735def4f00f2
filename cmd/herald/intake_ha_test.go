package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-k8s/herald/internal/testenv"
	"github.com/herald-k8s/herald/sinks"
)

// service stands in for a Kubernetes Service in front of herald's
// replicas: each request goes to the next replica in turn, and one that
// is down answers 502, as a connection to a dead pod's address fails.
type service struct {
	*http.Server
	url      string
	backends []*httputil.ReverseProxy
	next     atomic.Uint64
}

func newService(t *testing.T, addrs ...string) *service {
	t.Helper()
	s := &service{}
	for _, a := range addrs {
		u, _ := url.Parse("http://" + a)
		s.backends = append(s.backends, httputil.NewSingleHostReverseProxy(u))
	}
	addr := freeAddr(t)
	s.url = "http://" + addr
	s.Server = &http.Server{Addr: addr, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.backends[s.next.Add(1)%uint64(len(s.backends))].ServeHTTP(w, r)
	})}
	go s.ListenAndServe()
	t.Cleanup(func() { s.Close() })
	return s
}

// TestIntakeFailover: two herald replicas behind a Service take alerts
// from a real Alertmanager; the leader is SIGKILLed while Alertmanager
// is sending. Every alert reaches the webhook sink, and any repeat of
// one carries the same idempotency key: a receiver that drops repeats
// by key sees each alert once. None is lost.
func TestIntakeFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("two herald processes, a real Alertmanager and a failover")
	}
	besideHeavy(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	if _, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "herald"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bin := buildHerald(t)
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	env.WriteKubeconfig(kc)
	token := filepath.Join(dir, "token")
	os.WriteFile(token, []byte("failover-token-77\n"), 0o600)

	var mu sync.Mutex
	byKey := map[string][]sinks.Payload{}
	recv := newReceiver(t)
	go func() {
		for p := range recv.got {
			mu.Lock()
			byKey[p.Object.Name+"/"+p.Incident.Reason+"/"+string(p.Transition)] = append(byKey[p.Object.Name+"/"+p.Incident.Reason+"/"+string(p.Transition)], p)
			mu.Unlock()
		}
	}()

	addrs := []string{freeAddr(t), freeAddr(t)}
	svc := newService(t, addrs...)
	var replicas []*replica
	for i, addr := range addrs {
		cfg := filepath.Join(dir, fmt.Sprintf("herald-%d.yaml", i))
		os.WriteFile(cfg, []byte(fmt.Sprintf(`
incidents: {resolveHoldDown: 0s, flapping: {starts: 0}}
intake:
  alertmanager: {listen: %q, token: {file: %q}}
rules:
  - {name: crash, kind: Pod, detector: crashloop, sinks: [hook]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
`, addr, token, recv.URL)), 0o600)
		r := &replica{log: filepath.Join(dir, fmt.Sprintf("herald-%d.log", i))}
		logFile, _ := os.Create(r.log)
		r.cmd = exec.Command(bin, "run", "--config", cfg, "--kubeconfig", kc, "--namespace", "herald", "--metrics-addr", "127.0.0.1:0",
			"--lease-duration", "5s", "--renew-deadline", "3s", "--retry-period", "1s")
		r.cmd.Stdout, r.cmd.Stderr = logFile, logFile
		r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := r.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.done = make(chan struct{})
		go func() { r.exitErr = r.cmd.Wait(); logFile.Close(); close(r.done) }()
		t.Cleanup(func() { r.cmd.Process.Kill(); <-r.done })
		replicas = append(replicas, r)
	}
	var leader *replica
	if err := waitFor(30*time.Second, func() bool {
		for _, r := range replicas {
			if strings.Contains(r.logs(), `"msg":"starting workers"`) {
				leader = r
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no leader:\n%s\n%s", replicas[0].logs(), replicas[1].logs())
	}

	am, err := testenv.RunAlertmanagerWith(context.Background(), t.TempDir(), testenv.WebhookRoute{URL: svc.url + "/alerts", TokenFile: token,
		GroupBy: []string{"alertname"}, GroupInterval: time.Second}.Config(), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer am.Stop()

	// 40 alerts over 8 s (each its own group, so its own request); the
	// leader is killed after the 15th.
	const alerts = 40
	for i := range alerts {
		postAlert(t, am, map[string]string{"alertname": fmt.Sprintf("Batch%02d", i), "namespace": "shop", "severity": "warning"},
			map[string]string{"summary": fmt.Sprintf("batch %d behind", i)}, time.Now(), time.Time{})
		if i == 15 {
			leader.cmd.Process.Signal(syscall.SIGKILL)
		}
		time.Sleep(200 * time.Millisecond) // the alerts' schedule, not a wait for anything
	}
	if err := waitFor(90*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for k := range byKey {
			if strings.HasSuffix(k, "/firing") {
				n++
			}
		}
		return n == alerts
	}); err != nil {
		mu.Lock()
		t.Logf("delivered: %d keys", len(byKey))
		mu.Unlock()
		for i, r := range replicas {
			t.Logf("replica %d log:\n%s", i, grepLines(r.logs(), "intake"))
		}
		t.Fatalf("not every alert reached the sink")
	}
	mu.Lock()
	defer mu.Unlock()
	repeats := 0
	for k, ps := range byKey {
		// Every alert still fires: the new leader took back from its
		// ledger those that fired before (without them, its start-up
		// reconcile finds no alert for their keys and resolves them).
		if ps[0].Transition == "resolved" {
			t.Errorf("%s: resolved across the failover, though Alertmanager never said so", k)
		}
		for _, p := range ps[1:] {
			repeats++
			if p.ID != ps[0].ID {
				t.Errorf("%s delivered again with another idempotency key: %s then %s", k, ps[0].ID, p.ID)
			}
		}
	}
	t.Logf("%d alerts across a failover: %d deliveries repeated with the same key", alerts, repeats)
}

// TestIntakeDropsOwnAlerts: herald sends its incidents to an Alertmanager
// (its alertmanager sink) whose only receiver is herald's intake. A
// crash loop is one notification at the webhook sink, not two: the alert
// that comes back is herald's own, dropped and counted.
func TestIntakeDropsOwnAlerts(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	os.WriteFile(token, []byte("loop-token-31\n"), 0o600)
	intakeAddr := freeAddr(t)
	am, err := testenv.RunAlertmanagerWith(context.Background(), t.TempDir(), alertmanagerToHerald(intakeAddr, token), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer am.Stop()
	recv := newReceiver(t)
	metrics := freeAddr(t)
	h := startedHerald(t, env, fmt.Sprintf(`
incidents: {resolveHoldDown: 0s}
intake:
  alertmanager: {listen: %q, token: {file: %q}}
rules:
  - {name: crash, kind: Pod, detector: crashloop, sinks: [hook, am]}
sinks:
  - {name: hook, webhook: {url: %s/herald}}
  - {name: am, alertmanager: {urls: [%q], resendInterval: 1s}}
`, intakeAddr, token, recv.URL, am.URL), "--metrics-addr", metrics)
	defer h.stop()

	if _, err := client.CoreV1().Pods("default").Create(context.Background(), newPod("loop"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setStatus(t, client, "loop", crashLooping, 4)
	first := recv.next(t, 20*time.Second)
	if first.Incident.Rule != "crash" || first.Transition != "firing" {
		t.Fatalf("first notification %s/%s", first.Incident.Rule, first.Transition)
	}
	// The alert herald posted comes back (Alertmanager's group_wait is
	// 0 s): dropped. Once the intake has answered for it, nothing of it
	// is left to send.
	if err := waitFor(30*time.Second, func() bool {
		return metricValue(t, metrics, `herald_intake_alerts_total{outcome="looped"}`) >= 1
	}); err != nil {
		t.Fatalf("herald's own alert never came back through the intake (looped %v, refused %v); Alertmanager holds %s\nherald's log:\n%s",
			metricValue(t, metrics, `herald_intake_alerts_total{outcome="looped"}`), metricValue(t, metrics, `herald_intake_requests_refused_total{reason="unauthorized"}`),
			amAlertsJSON(t, am), h.logs.String())
	}
	select {
	case p := <-recv.got:
		t.Fatalf("a second notification: %s %s %s", p.Incident.Rule, p.Incident.Reason, p.Transition)
	default:
	}
	for _, outcome := range []string{"mapped", "unmapped"} {
		if v := metricValue(t, metrics, `herald_intake_alerts_total{outcome="`+outcome+`"}`); v != 0 {
			t.Errorf("%s alerts = %v: herald's own alert was taken in", outcome, v)
		}
	}
}
