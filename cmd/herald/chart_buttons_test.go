package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/herald-k8s/herald/internal/silence"
	"github.com/herald-k8s/herald/internal/slackstandin"
	"github.com/herald-k8s/herald/internal/testenv"
)

// saMay asks the API server's authorizer whether herald's ServiceAccount
// (the chart's, in namespace herald) may verb group/resource in namespace.
func saMay(t *testing.T, admin kubernetes.Interface, verb, group, resource, namespace string) bool {
	t.Helper()
	sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(context.Background(), &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:herald:herald",
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:herald", "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: group, Resource: resource, Namespace: namespace},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sar.Status.Allowed
}

// TestChartRBACButtons: the permissions Slack buttons need — create and
// delete Silences and create Events, in any namespace — are the chart's
// only with slack.interactive.enabled (the API server's authorizer says
// so, before and after a helm upgrade that turns them on), and they are
// enough: herald, run as the chart's ServiceAccount with the chart's
// configuration (its Slack API on the stand-in, its secret files in a
// temporary directory), holds the Socket Mode connection, creates the
// Silence a press asks for in the incident's namespace, records the
// Event, and deletes the Silence on Unsilence.
func TestChartRBACButtons(t *testing.T) {
	beside(t)
	env := controlPlanes.Get(t)
	admin, _ := env.Client()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	recv := newReceiver(t)
	sl, err := slackstandin.Start(slackstandin.Options{Logf: t.Logf, Users: map[string]string{"U0ANA1": "ana"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sl.Close)
	helmBin, err := testenv.EnsureHelm(ctx, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	kc := t.TempDir() + "/admin.kubeconfig"
	env.WriteKubeconfig(kc)
	helm := func(args ...string) string {
		cmd := exec.Command(helmBin, append(args, "../../charts/herald", "-n", "herald", "--kubeconfig", kc)...)
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helm %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	// The chart's Slack sink (its token file, #alerts) on the stand-in,
	// and a webhook that tells the test the incident's ID.
	helm("install", "herald", "--create-namespace",
		"--set-json", fmt.Sprintf(`config.sinks=[{"name":"slack","slack":{"token":{"file":"/var/run/secrets/herald/slack/token"},"apiURL":%q,"insecure":true}},{"name":"hook","webhook":{"url":"%s/herald"}}]`, sl.URL()+"/api/", recv.URL),
		"--set-json", `defaultSinks=["slack","hook"]`,
		// No node to run the config-check hook's Job on.
		"--set", "configCheck.enabled=false")

	grants := []struct{ verb, group, resource string }{
		{"create", "herald.io", "silences"}, {"delete", "herald.io", "silences"}, {"create", "", "events"},
	}
	for _, ns := range []string{"default", "shop"} {
		for _, g := range grants {
			if saMay(t, admin, g.verb, g.group, g.resource, ns) {
				t.Errorf("without buttons, herald may %s %s in %s", g.verb, g.resource, ns)
			}
		}
	}
	if !saMay(t, admin, "list", "herald.io", "silences", "shop") {
		t.Fatal("herald may not list silences: the access review does not see the chart's grants")
	}

	notes := helm("upgrade", "herald", "--reuse-values", "--set", "slack.interactive.enabled=true",
		"--set-json", `slack.interactive.allow=[{"namespaces":["default"],"silence":["U0ANA1"]}]`)
	if !strings.Contains(notes, "Slack buttons (sink slack)") || !strings.Contains(notes, `key "app-token" of the Secret "herald-slack"`) {
		t.Errorf("the notes do not say where the app-level token goes:\n%s", notes)
	}
	for _, ns := range []string{"default", "shop"} {
		for _, g := range grants {
			if !saMay(t, admin, g.verb, g.group, g.resource, ns) {
				t.Errorf("with buttons, herald may not %s %s in %s", g.verb, g.resource, ns)
			}
		}
		for _, verb := range []string{"create", "delete"} {
			if saMay(t, admin, verb, "herald.io", "clustersilences", "") {
				t.Errorf("with buttons, herald may %s clustersilences", verb)
			}
		}
	}

	// The chart's configuration, its secret files under dir.
	cm, err := admin.CoreV1().ConfigMaps("herald").Get(ctx, "herald", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	chartConfig := cm.Data["config.yaml"]
	for file, value := range map[string]string{"slack/token": "xoxb-chart-buttons", "slack-interactive/app-token": "xapp-1-A0CHART-1-0123abcd"} {
		if !strings.Contains(chartConfig, "/var/run/secrets/herald/"+file) {
			t.Fatalf("the chart's configuration does not read %s:\n%s", file, chartConfig)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, file)), 0o700)
		os.WriteFile(filepath.Join(dir, file), []byte(value), 0o600)
	}
	cfg := strings.ReplaceAll(chartConfig, "/var/run/secrets/herald/", dir+"/")
	saConfig, err := env.TokenConfig(ctx, admin, "herald", "herald")
	if err != nil {
		t.Fatal(err)
	}
	saKubeconfig := dir + "/sa.kubeconfig"
	if err := testenv.WriteKubeconfigOf(saKubeconfig, saConfig); err != nil {
		t.Fatal(err)
	}
	_, logs, _ := runHeraldAs(t, buildHerald(t), saKubeconfig, dir+"/config.yaml", cfg)
	if err := waitFor(30*time.Second, func() bool {
		return strings.Contains(logs.String(), "Slack Socket Mode connected: buttons are live") && strings.Contains(logs.String(), `msg="starting workers"`)
	}); err != nil {
		t.Fatalf("herald as the chart's ServiceAccount did not start, or did not connect to Slack:\n%s", logs)
	}

	crashPods(t, admin, "buttons", 1)
	firing := recv.next(t, 20*time.Second)
	if firing.Transition != "firing" {
		t.Fatalf("got %s, want the crash's firing", firing.Transition)
	}
	// herald's own message about it, with its buttons: a press counts
	// only on the message herald posted for the incident.
	var channel, ts string
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := sl.WaitFor(waitCtx, func(s *slackstandin.Server) bool {
		for _, m := range s.Messages() {
			if m.ThreadTS == "" && strings.Contains(string(m.Blocks), `"value":"`+firing.Incident.ID+`"`) && strings.Contains(string(m.Blocks), "herald_silence_1h") {
				channel, ts = m.Channel, m.TS
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("no Slack message with buttons for %s: %v\n%+v", firing.Incident.ID, err, sl.Messages())
	}
	press := func(action string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		env, err := sl.Press(ctx, slackstandin.Press{Channel: channel, TS: ts, ActionID: action, User: "U0ANA1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := sl.WaitAcked(ctx, env); err != nil {
			t.Fatalf("herald did not acknowledge the %s press: %v\n%s", action, err, logs)
		}
	}
	events := func(reason string) int {
		list, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "reason=" + reason})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}

	press("herald_silence_1h")
	var list *unstructured.UnstructuredList
	if err := waitFor(10*time.Second, func() bool {
		list, err = dyn.Resource(silence.Resource).Namespace("default").List(ctx, metav1.ListOptions{LabelSelector: "herald.io/created-via=slack"})
		return err == nil && len(list.Items) == 1
	}); err != nil {
		t.Fatalf("silences from the press: %v %v; want 1\n%s", list, err, grepLines(logs.String(), "Slack"))
	}
	name := list.Items[0].GetName()
	if n := events("Silenced"); n != 1 {
		t.Errorf("%d Silenced Events in default, want 1", n)
	}
	// Unsilence ends the silence that mutes the incident: once herald
	// has muted it (it says so to the webhook).
	for {
		if p := recv.next(t, 20*time.Second); p.Transition == "silenced" {
			break
		}
	}
	// The message, edited to say it is muted, offers Unsilence.
	if err := sl.WaitFor(waitCtx, func(s *slackstandin.Server) bool {
		m, _ := s.Message(channel, ts)
		return strings.Contains(string(m.Blocks), "herald_unsilence")
	}); err != nil {
		t.Fatalf("the message was not edited to offer Unsilence: %v", err)
	}
	press("herald_unsilence")
	if _, err := dyn.Resource(silence.Resource).Namespace("default").Get(ctx, name, metav1.GetOptions{}); err == nil {
		t.Errorf("silence %s is still there after Unsilence:\n%s", name, grepLines(logs.String(), "Slack"))
	}
	if n := events("Unsilenced"); n != 1 {
		t.Errorf("%d Unsilenced Events in default, want 1", n)
	}
	if strings.Contains(logs.String(), "forbidden") {
		t.Errorf("herald was forbidden something:\n%s", grepLines(logs.String(), "forbidden"))
	}
}
