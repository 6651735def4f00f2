package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/internal/silence"
	"github.com/herald-k8s/herald/internal/testenv"
)

// writeLedger saves incs as herald's leader does (claim, then shards) in
// namespace, under ledger name.
func writeLedger(t *testing.T, client *kube.Client, namespace, name string, incs []incident.Incident) {
	t.Helper()
	store := incident.NewConfigMapStore(client, namespace, name)
	if err := store.Claim(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := store.Save(context.Background(), incs); err != nil {
		t.Fatal(err)
	}
}

// TestCLIOnControlPlane drives the cluster-facing CLI against a real API
// server, with the cluster found as kubectl finds it ($KUBECONFIG only,
// a colon-separated list whose current context points nowhere, and
// --context): herald incidents finds a ledger's incidents, finds herald's
// namespace when not told, and fails where there is no ledger instead of
// saying 0; silence create --incident mutes exactly the incident's object
// or workload; silence expire takes its flags after the name.
func TestCLIOnControlPlane(t *testing.T) {
	env := controlPlanes.Get(t)
	ctx := context.Background()
	admin, _ := env.Client()
	typed, err := kube.New(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	createNamespaces(t, admin, "herald-system", "herald-two", "shop", "other")
	if err := env.InstallCRDs(ctx, silenceCRDs); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	pod := incident.Incident{ID: "a1b2c3d4e5f60718-1", Occurrence: 1, Fingerprint: "a1b2c3d4e5f60718", Rule: "pod-crashloop", Severity: "critical",
		Reason: "CrashLoopBackOff", Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "api-0", UID: "u1"}, Container: "app",
		Title: "api-0 crash-looping", Sinks: []string{"chat"}, FirstSeen: now.Add(-time.Hour), Seq: 3, LastTransition: incident.Updated, LastNotified: now}
	workload := incident.Incident{ID: "0f1e2d3c4b5a6978-2", Occurrence: 2, Fingerprint: "0f1e2d3c4b5a6978", Rule: "shop-crashloop", Severity: "warning",
		Reason: "CrashLoopBackOff", Object: rules.ObjectRef{Kind: "Deployment", Namespace: "shop", Name: "web"}, Grouped: true, Total: 2,
		Members: []string{"Pod/shop/web-1", "Pod/shop/web-2"}, Title: "web crash-looping", Sinks: []string{"chat"}, FirstSeen: now.Add(-time.Minute), Seq: 1,
		LastTransition: incident.Firing, LastNotified: now}
	gone := incident.Incident{ID: "9999999999999999-1", Occurrence: 1, Fingerprint: "9999999999999999", Rule: "pod-crashloop", Reason: "CrashLoopBackOff",
		Object: rules.ObjectRef{Kind: "Pod", Namespace: "shop", Name: "old-0"}, FirstSeen: now.Add(-2 * time.Hour), ResolvedAt: now, Seq: 2, LastTransition: incident.Resolved}
	writeLedger(t, typed, "herald-system", config.DefaultLedgerName, []incident.Incident{pod, workload, gone})

	// $KUBECONFIG names two files: the first's current context points at
	// nothing; the control plane is the second's context "testenv".
	dir := t.TempDir()
	nowhere := clientcmdapi.NewConfig()
	nowhere.Clusters["nowhere"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	nowhere.AuthInfos["nobody"] = &clientcmdapi.AuthInfo{Token: "x"}
	nowhere.Contexts["elsewhere"] = &clientcmdapi.Context{Cluster: "nowhere", AuthInfo: "nobody"}
	nowhere.CurrentContext = "elsewhere"
	if err := clientcmd.WriteToFile(*nowhere, filepath.Join(dir, "nowhere")); err != nil {
		t.Fatal(err)
	}
	if err := testenv.WriteKubeconfigOf(filepath.Join(dir, "testenv"), env.Config); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", filepath.Join(dir, "nowhere")+":"+filepath.Join(dir, "testenv"))
	t.Setenv("HOME", dir) // no ~/.kube/config of the machine's
	t.Setenv("POD_NAMESPACE", "")
	herald := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := runMain(ctx, args, &out, &errOut)
		return code, out.String(), errOut.String()
	}

	t.Run("KUBECONFIG and --context", func(t *testing.T) {
		code, out, errOut := herald("incidents", "-o", "json", "--namespace", "herald-system", "--context", "testenv")
		var open []openIncident
		if code != 0 || json.Unmarshal([]byte(out), &open) != nil {
			t.Fatalf("exit %d: %s %s", code, out, errOut)
		}
		if len(open) != 2 || open[0].ID != pod.ID || open[1].Object != "Deployment/shop/web" || open[1].Pods != "2/2" {
			t.Errorf("open incidents %+v; want api-0's and web's", open)
		}
		// The current context of the merged files is "elsewhere".
		if code, _, errOut := herald("incidents", "--namespace", "herald-system"); code != 1 || !strings.Contains(errOut, "context elsewhere") {
			t.Errorf("the current context: exit %d, %q; want 1 naming context elsewhere", code, errOut)
		}
	})

	t.Run("wrong namespace", func(t *testing.T) {
		code, out, errOut := herald("incidents", "--context", "testenv", "--namespace", "shop")
		if code != 1 || out != "" || !strings.Contains(errOut, `no herald ledger "herald-ledger" in namespace "shop" (context testenv): is herald installed there? use --namespace`) {
			t.Errorf("exit %d, stdout %q, stderr %q; want 1 naming the namespace, ledger and context", code, out, errOut)
		}
	})

	// The ledger is a ConfigMap anyone with edit rights in herald's
	// namespace can change: what it says reaches the terminal inert.
	t.Run("an edited ledger prints nothing raw", func(t *testing.T) {
		evil := pod
		evil.ID, evil.Fingerprint = "e1e1e1e1e1e1e1e1-1", "e1e1e1e1e1e1e1e1"
		evil.Object.Name, evil.Container = "api-0\x1b]52;c;Y3VybCBldmlsfHNo\a", "app\x1b[2J\u202e"
		writeLedger(t, typed, "herald-two", "edited", []incident.Incident{evil})
		code, out, errOut := herald("incidents", "--context", "testenv", "--namespace", "herald-two", "--ledger-name", "edited")
		if code != 0 || !strings.Contains(out, `api-0\x1b]52;c;`) {
			t.Fatalf("exit %d:\n%q%q", code, out, errOut)
		}
		for _, raw := range []string{"\x1b", "\a", "\u202e"} {
			if strings.Contains(out+errOut, raw) {
				t.Errorf("herald incidents printed %q raw: %q", raw, out)
			}
		}
		code, out, errOut = herald("incidents", "-o", "json", "--context", "testenv", "--namespace", "herald-two", "--ledger-name", "edited")
		var open []openIncident
		if err := json.Unmarshal([]byte(out), &open); code != 0 || err != nil || len(open) != 1 || open[0].Container != evil.Container {
			t.Errorf("-o json of an edited ledger: exit %d, %v: %q %q", code, err, out, errOut)
		}
		if strings.ContainsAny(out, "\x1b\a\u202e") {
			t.Errorf("-o json printed controls raw: %q", out)
		}
	})

	t.Run("namespace found", func(t *testing.T) {
		code, out, errOut := herald("incidents", "--context", "testenv")
		if code != 0 || !strings.Contains(out, "Pod/shop/api-0") || !strings.HasSuffix(out, "2 open incidents\n") {
			t.Errorf("without --namespace: exit %d:\n%s%s", code, out, errOut)
		}
		if code, _, errOut := herald("incidents", "--context", "testenv", "--ledger-name", "nope"); code != 1 || !strings.Contains(errOut, `no herald ledger "nope" in any namespace (context testenv)`) {
			t.Errorf("no such ledger anywhere: exit %d, %q", code, errOut)
		}
		// A ledger that holds nothing open says so, in words.
		writeLedger(t, typed, "herald-two", "quiet", []incident.Incident{gone})
		if code, out, errOut := herald("incidents", "--context", "testenv", "--ledger-name", "quiet"); code != 0 ||
			out != "no open incidents in herald's ledger \"quiet\" in namespace \"herald-two\" (context testenv)\n" {
			t.Errorf("an empty ledger: exit %d, %q %q", code, out, errOut)
		}
		writeLedger(t, typed, "herald-two", config.DefaultLedgerName, nil)
		if code, _, errOut := herald("incidents", "--context", "testenv"); code != 1 || !strings.Contains(errOut, "is in several namespaces (herald-system, herald-two)") {
			t.Errorf("two ledgers: exit %d, %q; want 1 asking for --namespace", code, errOut)
		}
		t.Setenv("POD_NAMESPACE", "herald-system")
		if code, out, _ := herald("incidents", "--context", "testenv"); code != 0 || !strings.Contains(out, "2 open incidents") {
			t.Errorf("with $POD_NAMESPACE: exit %d, %q", code, out)
		}
	})

	t.Run("silence create --incident", func(t *testing.T) {
		t.Setenv("POD_NAMESPACE", "herald-system")
		read := func(out string) silence.Silence {
			t.Helper()
			name := regexp.MustCompile(`silence shop/(silence-\S+) created`).FindStringSubmatch(out)
			if name == nil {
				t.Fatalf("no silence created: %q", out)
			}
			obj, err := dyn.Resource(silence.Resource).Namespace("shop").Get(ctx, name[1], metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s, err := silence.Parse(obj)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		// The footer shows the notification's ID: the incident's and its number.
		code, out, errOut := herald("silence", "create", "--incident", pod.ID+"-3", "--for", "1h", "--comment", "fixing it", "--context", "testenv")
		if code != 0 {
			t.Fatalf("exit %d: %s%s", code, out, errOut)
		}
		if m := read(out).Matchers; m != (silence.Matchers{Kind: "Pod", Name: "api-0", Rule: "pod-crashloop"}) {
			t.Errorf("matchers %+v; want exactly Pod api-0 for rule pod-crashloop", m)
		}
		code, out, errOut = herald("silence", "create", "--context", "testenv", "--namespace", "shop", "--incident", workload.ID, "--until", now.Add(time.Hour).Format(time.RFC3339), "--comment", "rollback")
		if code != 0 {
			t.Fatalf("exit %d: %s%s", code, out, errOut)
		}
		if m := read(out).Matchers; m != (silence.Matchers{Workload: "Deployment/web", Rule: "shop-crashloop"}) {
			t.Errorf("matchers %+v; want exactly Deployment/web for rule shop-crashloop", m)
		}
		for _, bad := range []struct {
			args []string
			want string
		}{
			{[]string{"--incident", "ffffffffffffffff-1"}, `no incident "ffffffffffffffff-1" in herald's ledger "herald-ledger" in namespace "herald-system" (context testenv)`},
			{[]string{"--incident", pod.ID, "--namespace", "other"}, `incident a1b2c3d4e5f60718-1 is in namespace "shop", not "other"`},
		} {
			code, _, errOut := herald(append([]string{"silence", "create", "--context", "testenv", "--for", "1h", "--comment", "x"}, bad.args...)...)
			if code != 1 || !strings.Contains(errOut, bad.want) {
				t.Errorf("%v: exit %d, %q; want 1 and %q", bad.args, code, errOut, bad.want)
			}
		}
	})

	t.Run("flags after the name", func(t *testing.T) {
		code, out, errOut := herald("silence", "create", "--context", "testenv", "--namespace", "shop", "--name", "db-*", "--for", "1h", "--comment", "x",
			"--starts", now.Add(-time.Minute).Format(time.RFC3339))
		name := regexp.MustCompile(`silence shop/(silence-\S+) created`).FindStringSubmatch(out)
		if code != 0 || name == nil {
			t.Fatalf("create: exit %d, %q %q", code, out, errOut)
		}
		if code, out, errOut := herald("silence", "expire", name[1], "--namespace", "shop", "--context", "testenv"); code != 0 || !strings.Contains(out, "expired") {
			t.Fatalf("expire NAME --namespace shop: exit %d, %q %q", code, out, errOut)
		}
		obj, err := dyn.Resource(silence.Resource).Namespace("shop").Get(ctx, name[1], metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if s, err := silence.Parse(obj); err != nil || s.State(time.Now().Add(time.Second)) != "expired" {
			t.Errorf("after expire: %+v (%v); want it expired", s, err)
		}
	})
}
