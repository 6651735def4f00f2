package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/oncalltest"
	"github.com/herald-k8s/herald/internal/testenv"
)

// Values a pod template, a ConfigMap and a Secret hold: none may reach a
// sink, the ledger or herald's log (what changed names, never quotes).
var templateValues = []string{
	"EnvValue-Plain-4242", "EnvValue-Plain-4343", // DB_POOL, before and after
	"ApiKeyValue-9f8e7d", "ApiKeyValue-0a1b2c", // API_KEY, before and after
	"ArgValue-5150", "ArgValue-6160", // --token=…, before and after
	"CmValue-1111", "CmValue-2222", // app-config's data, before and after
	"SecretValue-3333", "SecretValue-4444", // db-creds' data, before and after
}

// changesConfig sends to every kind of sink: the webhook, Slack, Teams,
// PagerDuty, a real Alertmanager and stdout (herald's log here).
const changesConfig = `
clusterName: test
context: {enabled: false}
incidents: {ledgerName: herald-ledger}
rules:
  - {name: crashloop, kind: Pod, detector: crashloop, namespaces: {include: [shop]}, sinks: [hook, slack, teams, page, am, console]}
sinks:
  - {name: hook, webhook: {url: %q}}
  - {name: slack, slack: {token: {value: xoxb-routing-test, allowPlaintext: true}, channel: "#alerts", apiURL: %q, insecure: true}}
  - {name: teams, teams: {url: %q}}
  - {name: page, pagerduty: {routingKey: {value: changeschangeschangeschangeschan, allowPlaintext: true}, url: %q}}
  - {name: am, alertmanager: {urls: [%q], resendInterval: 1s}}
  - {name: console, stdout: {format: text}}
`

// TestWhatChangedEndToEnd: on the real API server, a Deployment rolled
// (image, env values, args) and the ConfigMap and Secret it reads edited,
// then its pod crash-loops: the firing alert names the rollout (both
// images, the env var and args by name, the revision), the undo command
// and both objects' changes; a second workload that reads the same
// ConfigMap and fails after says the first does too. Every kind of sink
// shows it (webhook, Slack, Teams, PagerDuty, a real Alertmanager,
// stdout). No value of the template, the ConfigMap or the Secret reaches
// any of them, the ledger, herald's log or what herald test --live
// prints (which shows the section too), and herald makes no API request for any of it once
// its informers run: every request it sends in the crash phase, watches
// and its own namespace aside, is counted, and there are none.
func TestWhatChangedEndToEnd(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	client, _ := env.Client()
	ctx := context.Background()
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCreate := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := client.CoreV1().ConfigMaps("shop").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"},
		Data: map[string]string{"DB_URL": "postgres://db/" + templateValues[6]}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = client.CoreV1().Secrets("shop").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db-creds"},
		StringData: map[string]string{"password": templateValues[8]}}, metav1.CreateOptions{})
	mustCreate(err)
	for _, name := range []string{"checkout", "cart"} {
		_, err = client.AppsV1().Deployments("shop").Create(ctx, shopDeployment(name, "shop/"+name+":1.8.2", templateValues[0], templateValues[2], templateValues[4]), metav1.CreateOptions{})
		mustCreate(err)
	}

	recv := newRawReceiver(t)
	slack, teams, pd := newSlackChannels(t), oncalltest.NewTeams(t), oncalltest.NewPagerDuty(t)
	am, err := testenv.RunAlertmanager(ctx, t.TempDir(), 5*time.Minute, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer am.Stop()
	api := newRecordingProxy(t, env.Config)
	cfg := fmt.Sprintf(changesConfig, recv.URL, slack.URL+"/api/", teams.URL, pd.URL, am.URL)
	h := startedHerald(t, env, cfg, "--kubeconfig", api.kubeconfig(t))
	phase := api.mark()

	// The rollout: what kubectl set image / set env would write, then
	// the revision the Deployment controller would set.
	d, err := client.AppsV1().Deployments("shop").Get(ctx, "checkout", metav1.GetOptions{})
	mustCreate(err)
	rolled := shopDeployment("checkout", "shop/checkout:1.9.0", templateValues[1], templateValues[3], templateValues[5])
	d.Spec.Template = rolled.Spec.Template
	d, err = client.AppsV1().Deployments("shop").Update(ctx, d, metav1.UpdateOptions{FieldManager: "argocd-controller"})
	mustCreate(err)
	d.Annotations["deployment.kubernetes.io/revision"] = "2"
	_, err = client.AppsV1().Deployments("shop").Update(ctx, d, metav1.UpdateOptions{FieldManager: "kube-controller-manager"})
	mustCreate(err)
	cm, err := client.CoreV1().ConfigMaps("shop").Get(ctx, "app-config", metav1.GetOptions{})
	mustCreate(err)
	cm.Data["DB_URL"] = "postgres://db/" + templateValues[7]
	_, err = client.CoreV1().ConfigMaps("shop").Update(ctx, cm, metav1.UpdateOptions{})
	mustCreate(err)
	sec, err := client.CoreV1().Secrets("shop").Get(ctx, "db-creds", metav1.GetOptions{})
	mustCreate(err)
	sec.StringData = map[string]string{"password": templateValues[9]}
	_, err = client.CoreV1().Secrets("shop").Update(ctx, sec, metav1.UpdateOptions{})
	mustCreate(err)

	crashOwnedPod(t, client, "checkout", "7d9f")
	first := awaitChanges(t, recv, "checkout-7d9f-x1")
	var got []string
	for _, ro := range first.Rollouts {
		got = append(got, ro.Items...)
	}
	joined := strings.Join(got, "; ")
	for _, want := range []string{"shop/checkout:1.8.2 → 1.9.0", "env API_KEY changed", "DB_POOL changed", "args"} {
		if !strings.Contains(joined, want) {
			t.Errorf("the rollout's items lack %q: %s", want, joined)
		}
	}
	// The rollout, then the Deployment's creation seconds before (in
	// the window too, and said as such).
	if len(first.Rollouts) != 2 || first.Rollouts[0].Revision != "2" || first.Rollouts[0].By != "argocd-controller" ||
		!first.Rollouts[1].Known || strings.Join(first.Rollouts[1].Items, ",") != "created" {
		t.Errorf("rollouts %+v: want revision 2 by argocd-controller, then the creation", first.Rollouts)
	}
	if first.Undo != "kubectl rollout undo deployment/checkout -n shop --to-revision=1" {
		t.Errorf("undo %q", first.Undo)
	}
	var objects []string
	for _, o := range first.Objects {
		objects = append(objects, o.Kind+"/"+o.Name)
	}
	if slices.Sort(objects); strings.Join(objects, ",") != "ConfigMap/app-config,Secret/db-creds" {
		t.Errorf("objects %v, want the ConfigMap and the Secret", objects)
	}

	crashOwnedPod(t, client, "cart", "5c4b")
	second := awaitChanges(t, recv, "cart-5c4b-x1")
	var shared []string
	for _, o := range second.Objects {
		if o.Name == "app-config" {
			shared = o.AlsoFailing
		}
	}
	if len(shared) != 1 || shared[0] != "Deployment/checkout" {
		t.Errorf("cart's alert: app-config also fails %v, want Deployment/checkout; lines %q", shared, second.Lines)
	}
	requests := api.since(phase)

	// Every sink shows the section: what each received, as text.
	outputs := map[string]func() string{
		"the webhook": recv.all,
		"Slack": func() string {
			var b strings.Builder
			for _, p := range slack.all() {
				b.WriteString(p.Text + "\n" + p.Blocks + "\n")
			}
			return b.String()
		},
		"Teams":        func() string { return asJSON(t, teams.Cards()) },
		"PagerDuty":    func() string { return asJSON(t, pd.Events()) },
		"Alertmanager": func() string { return amAlertsJSON(t, am) },
		"stdout":       h.logs.String,
	}
	for _, sink := range slices.Sorted(maps.Keys(outputs)) {
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
			out := outputs[sink]()
			return strings.Contains(out, "1.8.2 → 1.9.0") && strings.Contains(out, "app-config") &&
				strings.Contains(out, "--to-revision=1"), nil
		})
		if err != nil {
			t.Errorf("%s does not show the rollout, the ConfigMap and the undo command:\n%s", sink, outputs[sink]())
		}
	}
	h.stop() // the ledger is written

	for _, r := range requests {
		if strings.Contains(r, "watch=true") || strings.Contains(r, "/namespaces/default/") || strings.Contains(r, "/leases/") {
			continue // informers' watches; the ledger and the lease in herald's namespace
		}
		t.Errorf("herald sent an API request while notifying: %s", r)
	}
	t.Logf("%d API requests by herald in the crash phase (of %d in all), all watches or its own namespace's", len(requests), api.mark())

	cms, err := client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: "herald.io/ledger=herald-ledger"})
	if err != nil || len(cms.Items) == 0 {
		t.Fatalf("no ledger ConfigMaps: %v", err)
	}
	var ledger strings.Builder
	for _, c := range cms.Items {
		for k, v := range c.Data {
			ledger.WriteString(k + ": " + v + "\n")
		}
	}
	// herald test --live prints the section each firing would carry, as
	// herald would say it right after a start: it saw no rollout happen,
	// so it names the last spec write and says what it cannot know.
	dir := t.TempDir()
	kc, cfgPath := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "herald.yaml")
	if err := env.WriteKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var testOut, testErr bytes.Buffer
	if code := runMain(ctx, []string{"test", "-f", cfgPath, "--kubeconfig", kc}, &testOut, &testErr); code != 0 {
		t.Fatalf("herald test --kubeconfig: exit %d\n%s%s", code, testOut.String(), testErr.String())
	}
	printed := testOut.String()
	for _, want := range []string{
		"  what changed (Deployment/checkout; as herald says it right after a start",
		"\n    Changed ",
		"before the failure (revision 2, by argocd-controller); herald started watching it later and cannot say what changed: kubectl rollout history deployment/checkout -n shop --revision=2",
		"\n    ConfigMap app-config created ",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("herald test --kubeconfig does not print %q:\n%s", want, printed)
		}
	}
	seen := map[string]string{"the ledger": ledger.String(), "herald's log": h.logs.String(), "herald test": printed}
	for sink, out := range outputs {
		seen[sink] = out()
	}
	for _, v := range templateValues {
		for where, text := range seen {
			if strings.Contains(text, v) {
				t.Errorf("%s holds the value %q", where, v)
			}
		}
	}
}

func asJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// amAlertsJSON is Alertmanager's own answer: every alert it holds, with
// its annotations.
func amAlertsJSON(t *testing.T, am *testenv.Alertmanager) string {
	resp, err := http.Get(am.URL + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var alerts []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&alerts); err != nil {
		t.Fatal(err)
	}
	return asJSON(t, alerts)
}

// shopDeployment reads app-config (env and a volume) and db-creds.
func shopDeployment(name, image, pool, apiKey, token string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Annotations: map[string]string{"deployment.kubernetes.io/revision": "1"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{Name: "app", Image: image, Args: []string{"--token=" + token},
						Env: []corev1.EnvVar{{Name: "DB_POOL", Value: pool}, {Name: "API_KEY", Value: apiKey},
							{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds"}, Key: "password"}}}},
						EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}},
					}},
					Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
						LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}},
				},
			},
		},
	}
}

// crashOwnedPod makes a pod of deployment's ReplicaSet (as the
// controllers would: owner reference and pod-template-hash) and writes a
// crash loop into its status.
func crashOwnedPod(t *testing.T, client kubernetes.Interface, deployment, hash string) {
	t.Helper()
	pod := ownedPod(deployment, hash)
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "sidecar", Image: "example.com/sidecar:1"})
	createCrashing(t, client, pod)
}

// ownedPod is a pod of deployment's ReplicaSet of template hash hash in
// namespace shop, with one container, app.
func ownedPod(deployment, hash string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: deployment + "-" + hash + "-x1", Namespace: "shop",
			Labels: map[string]string{"app": deployment, "pod-template-hash": hash},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: deployment + "-" + hash,
				UID: types.UID("rs-" + hash), Controller: ptrTo(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "shop/" + deployment + ":1.9.0"}}},
	}
}

// createCrashing creates pod and has its app container crash-loop.
func createCrashing(t *testing.T, client kubernetes.Interface, pod *corev1.Pod) {
	t.Helper()
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := writePodStatusIn(client, pod.Namespace, pod.Name, crashLooping, 3); err != nil {
		t.Fatal(err)
	}
}

// awaitChanges waits for pod's firing payload and returns its section.
func awaitChanges(t *testing.T, recv *rawReceiver, pod string) *incident.Changes {
	t.Helper()
	var found *incident.Changes
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(context.Context) (bool, error) {
		for _, body := range strings.Split(recv.all(), "\n") {
			var p struct {
				Transition string `json:"transition"`
				Object     struct{ Name string }
				Changes    *incident.Changes `json:"changes"`
			}
			if json.Unmarshal([]byte(body), &p) == nil && p.Transition == "firing" && p.Object.Name == pod {
				found = p.Changes
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil || found == nil {
		t.Fatalf("no firing for %s with a What changed section (%v); payloads:\n%s", pod, err, recv.all())
	}
	return found
}

// recordingProxy stands between herald and the API server and keeps the
// method and URL of every request herald sends.
type recordingProxy struct {
	*httptest.Server
	token string
	mu    sync.Mutex
	seen  []string
}

func newRecordingProxy(t *testing.T, to *rest.Config) *recordingProxy {
	target, err := url.Parse(to.Host)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := rest.TLSConfigFor(to)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = &http.Transport{TLSClientConfig: tlsCfg, ForceAttemptHTTP2: false}
	rp.FlushInterval = -1 // watches stream
	p := &recordingProxy{token: to.BearerToken}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.Method+" "+r.URL.RequestURI())
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	p.Server.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
	p.StartTLS()
	t.Cleanup(p.Close)
	return p
}

// kubeconfig writes a kubeconfig that reaches the API server through p.
func (p *recordingProxy) kubeconfig(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "proxied.kubeconfig")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Certificate().Raw})
	if err := testenv.WriteKubeconfigOf(path, &rest.Config{Host: p.URL, BearerToken: p.token, TLSClientConfig: rest.TLSClientConfig{CAData: ca}}); err != nil {
		t.Fatal(err)
	}
	return path
}

func (p *recordingProxy) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.seen)
}

func (p *recordingProxy) since(mark int) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.seen[mark:])
}
