package realnode

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/herald-k8s/herald/internal/ociimage"
	"github.com/herald-k8s/herald/internal/slackstandin"
	"github.com/herald-k8s/herald/internal/testenv"
)

// installation is herald installed by Helm from an OCI registry, as a
// user installs it: the image built by `make image`'s code and pushed to
// a real registry the node pulls from, the chart packaged and pushed as
// an OCI artifact, and `helm install` with only the values a user sets.
type installation struct {
	helm, kubeconfig, namespace, release string
	registry                             *testenv.Registry
	slack                                *slackstandin.Server
	chartRef, version, layout            string
}

// TestHelmInstall installs herald with Helm onto the real node and
// checks what a user checks: both pods Ready (the probes hold, in-cluster
// configuration reaches the API server through the kubernetes Service),
// one Lease holder, metrics served, and a crash-looping Deployment in
// another namespace gives one Slack message with its log tail and a
// "What changed" section.
func TestHelmInstall(t *testing.T) {
	start := time.Now()
	in := install(t)
	t.Logf("image built and pushed, chart pushed, helm install --wait done in %s", time.Since(start).Round(time.Second))

	pods := in.readyPods(t, 2, 3*time.Minute)
	holder := in.leaseHolder(t, pods, time.Minute)
	t.Logf("pods %s and %s Ready; %s holds the Lease", pods[0].Name, pods[1].Name, holder.Name)
	for _, p := range pods {
		metrics := get(t, "http://"+net.JoinHostPort(p.Status.PodIP, "8080")+"/metrics")
		// The sample's own line: the metric's HELP text reads
		// "herald_leader 1 while this replica holds the lease".
		want := "herald_leader 0"
		if p.Name == holder.Name {
			want = "herald_leader 1"
		}
		if !slices.Contains(strings.Split(metrics, "\n"), want) {
			t.Errorf("pod %s's /metrics lacks the line %q", p.Name, want)
		}
	}

	// A crash-looping Deployment in a namespace of its own.
	crashStart := time.Now()
	namespace(t, "install-crash")
	deployment(t, "install-crash", "ledger-api", 1, workload("-log", "ledger-api: cannot reach postgres at db:5432", "-exit", "1"))
	msg := in.awaitMessage(t, "ledger-api", 3*time.Minute)
	t.Logf("the crash loop's Slack message %s after the Deployment was made", time.Since(crashStart).Round(time.Second))
	blocks := string(msg.Blocks)
	for _, want := range []string{"install-crash", "Last log lines", "cannot reach postgres at db:5432", "What changed"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("the crash-loop message lacks %q:\n%s", want, blocks)
		}
	}
	// Later changes of the incident edit that message; none is posted
	// anew (the pod keeps crashing meanwhile).
	awaitPods(t, "install-crash", "ledger-api", 2*time.Minute, "ledger-api restarted twice", func(pods []corev1.Pod) bool {
		return restarts(pods) >= 2
	})
	if got := in.messagesAbout("ledger-api"); len(got) != 1 {
		t.Errorf("%d top-level messages about ledger-api, want 1", len(got))
	}

	// Values herald would refuse fail the upgrade, and the running pods
	// are left as they were: a typo the chart sees while rendering, and
	// a CEL condition only herald can judge (the config-check hook).
	before := in.podNames(t)
	for _, bad := range []struct{ values, want string }{
		{`[{"name":"sts","kind":"StatefulSet","detector":"unavailble"}]`, `extraRules[0].detector: unknown detector "unavailble"`},
		{`[{"name":"jobs","kind":"Job","detector":"job-failed","sinks":["pagerduty"]}]`, `extraRules[0].sinks[0]: no sink named "pagerduty"`},
		{`[{"name":"phase","kind":"Pod","condition":"object.status.phase ==","sinks":["slack"]}]`, `pre-upgrade hooks failed`},
	} {
		out, err := in.helmOutput("upgrade", in.release, in.chartRef, "--version", chartVersion(t), "--plain-http", "--namespace", in.namespace,
			"--reuse-values", "--set-json", "extraRules="+bad.values, "--wait", "--timeout", "2m")
		if err == nil || !strings.Contains(out, bad.want) {
			t.Errorf("helm upgrade with extraRules=%s: %v, want a failure with %q:\n%s", bad.values, err, bad.want, out)
		}
	}
	if logs := in.jobLogs(t, in.release+"-config-check"); !strings.Contains(logs, "rules[") || !strings.Contains(logs, "condition") {
		t.Errorf("the config-check Job's log does not say what is wrong with the condition:\n%s", logs)
	}
	if after := in.podNames(t); after != before {
		t.Errorf("a refused upgrade touched the pods: %s before, %s after", before, after)
	}

	// A rolling upgrade to another tag of the image while the incident is
	// open: the ledger carries it, so the next update edits the same
	// message and nothing is sent again (the Deployment's default
	// strategy for 2 replicas: one new pod at a time, none unavailable).
	updates := in.messagesAbout("ledger-api")[0].Updates
	next := ociimage.Reference{Registry: in.registry.Host, Repository: "herald/herald", Tag: in.version + "-next"}
	if _, err := (ociimage.Pusher{PlainHTTP: true}).Push(context.Background(), in.layout, next); err != nil {
		t.Fatal(err)
	}
	upgradeStart := time.Now()
	in.run(t, "upgrade", in.release, in.chartRef, "--version", chartVersion(t), "--plain-http", "--namespace", in.namespace,
		"--reuse-values", "--set", "image.tag="+next.Tag, "--wait", "--timeout", "4m")
	pods = in.readyPods(t, 2, 2*time.Minute)
	for _, p := range pods {
		if p.Spec.Containers[0].Image != next.String() {
			t.Errorf("after the upgrade pod %s runs %s, want %s", p.Name, p.Spec.Containers[0].Image, next)
		}
	}
	holder = in.leaseHolder(t, pods, time.Minute)
	t.Logf("helm upgrade to %s: done in %s, %s leads", next.Tag, time.Since(upgradeStart).Round(time.Second), holder.Name)
	// A second pod of the workload crashing changes the incident (1 → 2
	// of 2 pods): the new leader edits the message the old one posted.
	patchDeployment(t, "install-crash", "ledger-api", `{"spec":{"replicas":2}}`)
	in.awaitUpdate(t, "ledger-api", updates, 2*time.Minute)
	if got := in.messagesAbout("ledger-api"); len(got) != 1 {
		t.Errorf("after the upgrade, %d top-level messages about ledger-api, want 1 (the same one, edited)", len(got))
	}

	// The leader's pod deleted (kubectl delete pod): the other replica
	// takes over within the lease, and nothing is sent again. (Even with
	// a grace period of 0 the kubelet sends SIGTERM first and herald
	// releases the Lease; a leader that cannot release it is the
	// split-brain test's, cmd/herald.)
	deleted := time.Now()
	if err := client.CoreV1().Pods(in.namespace).Delete(context.Background(), holder.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var survivor corev1.Pod
	for _, p := range pods {
		if p.Name != holder.Name {
			survivor = p
		}
	}
	// Within the lease (the chart's 15 s) from the survivor's last
	// observation, at most a retry period (2 s) before the kill, and its
	// next try (2 s); 6 s for a busy machine.
	in.leaseHolder(t, []corev1.Pod{survivor}, 15*time.Second+2*2*time.Second+6*time.Second)
	t.Logf("leader %s deleted: %s holds the Lease %s later", holder.Name, survivor.Name, time.Since(deleted).Round(100*time.Millisecond))
	in.readyPods(t, 2, 2*time.Minute)
	if got := in.messagesAbout("ledger-api"); len(got) != 1 {
		t.Errorf("after the failover, %d top-level messages about ledger-api, want 1", len(got))
	}

	// helm test: herald answers, and a test message reaches Slack.
	sent := len(in.slack.Messages())
	in.run(t, "test", in.release, "--namespace", in.namespace, "--timeout", "2m")
	if len(in.slack.Messages()) <= sent {
		t.Error("helm test passed without a test message at Slack")
	}

	// helm uninstall leaves what the docs say it leaves: the ledger's
	// ConfigMaps (labelled app.kubernetes.io/managed-by=herald) and the
	// Lease; the documented clean-up removes them.
	in.run(t, "uninstall", in.release, "--namespace", in.namespace, "--wait", "--timeout", "2m")
	if left := in.left(t); left != "configmaps: herald-ledger*; leases: herald; pods: none; secrets: herald-slack" {
		t.Errorf("after helm uninstall: %s", left)
	}
	ctx := context.Background()
	if err := client.CoreV1().ConfigMaps(in.namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=herald"}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoordinationV1().Leases(in.namespace).Delete(ctx, in.release, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if left := in.left(t); left != "configmaps: none; leases: none; pods: none; secrets: herald-slack" {
		t.Errorf("after the documented clean-up: %s", left)
	}
}

// install builds and pushes the image and the chart, starts the Slack
// stand-in and runs helm install.
func install(t *testing.T) *installation {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	in := &installation{namespace: "herald", release: "herald", kubeconfig: filepath.Join(dir, "kubeconfig")}
	var err error
	if in.helm, err = testenv.EnsureHelm(ctx, t.Logf); err != nil {
		t.Fatal(err)
	}
	if in.version, err = ociimage.ChartAppVersion("../../charts/herald/Chart.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := env.WriteKubeconfig(in.kubeconfig); err != nil {
		t.Fatal(err)
	}

	// The registry listens where the node reaches this machine.
	in.registry = testenv.StartRegistry(t, env.Node.HostIP)
	if err := env.Node.TrustRegistry(in.registry.Host); err != nil {
		t.Fatal(err)
	}
	in.layout = filepath.Join(dir, "image")
	if _, err := testenv.BuildHeraldImage(ctx, testenv.HeraldImage{Out: in.layout, Version: in.version,
		Revision: "realnode", Created: time.Now().UTC().Truncate(time.Second)}); err != nil {
		t.Fatal(err)
	}
	image := ociimage.Reference{Registry: in.registry.Host, Repository: "herald/herald", Tag: in.version}
	if _, err := (ociimage.Pusher{PlainHTTP: true}).Push(ctx, in.layout, image); err != nil {
		t.Fatal(err)
	}
	in.run(t, "package", "../../charts/herald", "--destination", dir)
	in.run(t, "push", filepath.Join(dir, "herald-"+chartVersion(t)+".tgz"), "oci://"+in.registry.Host+"/charts", "--plain-http")
	in.chartRef = "oci://" + in.registry.Host + "/charts/herald"

	// Slack, where the pods reach this machine.
	if in.slack, err = slackstandin.Start(slackstandin.Options{Addr: net.JoinHostPort(env.Node.HostIP, "0"), BotToken: "xoxb-realnode-install"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(in.slack.Close)

	// What the README tells a user to do: a namespace, the bot token's
	// Secret, helm install.
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: in.namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "herald-slack"}, StringData: map[string]string{"token": "xoxb-realnode-install"}}
	if _, err := client.CoreV1().Secrets(in.namespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sinks := fmt.Sprintf(`[{"name":"slack","slack":{"token":{"file":"/var/run/secrets/herald/slack/token"},"apiURL":%q,"insecure":true}}]`, in.slack.URL()+"/api/")
	in.run(t, "install", in.release, in.chartRef, "--version", chartVersion(t), "--plain-http", "--namespace", in.namespace,
		"--set", "clusterName=realnode", "--set", "slack.channel=#alerts",
		"--set", "image.repository="+in.registry.Host+"/herald/herald",
		"--set-json", "config.sinks="+sinks,
		"--wait", "--timeout", "4m")
	t.Cleanup(func() {
		in.helmOutput("uninstall", in.release, "--namespace", in.namespace, "--wait", "--timeout", "1m") // nothing to uninstall when the test did
	})
	return in
}
