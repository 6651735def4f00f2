package realnode

// The helpers of TestHelmInstall: helm, the release's pods, Lease and
// Slack messages, and what an uninstall leaves.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/internal/ociimage"
	"github.com/herald-k8s/herald/internal/slackstandin"
)

// podNames lists the release's pods by name, sorted.
func (in *installation) podNames(t *testing.T) string {
	t.Helper()
	list, err := client.CoreV1().Pods(in.namespace).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + in.release + ",app.kubernetes.io/name=herald"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// jobLogs returns the log of the Job's pod.
func (in *installation) jobLogs(t *testing.T, job string) string {
	t.Helper()
	ctx := context.Background()
	list, err := client.CoreV1().Pods(in.namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil || len(list.Items) == 0 {
		return fmt.Sprintf("no pod of Job %s: %v", job, err)
	}
	logs, err := client.CoreV1().Pods(in.namespace).GetLogs(list.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return err.Error()
	}
	return string(logs)
}

// awaitUpdate waits until the message about what has been edited more
// than `since` times.
func (in *installation) awaitUpdate(t *testing.T, what string, since int, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		got := in.messagesAbout(what)
		return len(got) > 0 && got[0].Updates > since, nil
	})
	if err != nil {
		t.Fatalf("the message about %s was not edited again within %s\n%s", what, timeout, in.podLogs())
	}
}

// left says, by kind, what remains in the release's namespace (the API
// server's own kube-root-ca.crt and Helm's release records aside); the
// ledger's ConfigMaps, whatever their number, show as herald-ledger*.
func (in *installation) left(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	var kinds []string
	names := func(kind string, list []string) {
		slices.Sort(list)
		list = slices.Compact(list)
		if len(list) == 0 {
			list = []string{"none"}
		}
		kinds = append(kinds, kind+": "+strings.Join(list, ","))
	}
	cms, err := client.CoreV1().ConfigMaps(in.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, c := range cms.Items {
		switch {
		case c.Name == "kube-root-ca.crt":
		case c.Labels["app.kubernetes.io/managed-by"] == "herald" && strings.HasPrefix(c.Name, "herald-ledger"):
			list = append(list, "herald-ledger*")
		default:
			list = append(list, c.Name)
		}
	}
	names("configmaps", list)
	leases, err := client.CoordinationV1().Leases(in.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list = nil
	for _, l := range leases.Items {
		list = append(list, l.Name)
	}
	names("leases", list)
	// Pods go with their Deployment, after their grace period.
	var pods *corev1.PodList
	wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err = client.CoreV1().Pods(in.namespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) == 0, nil
	})
	list = nil
	for _, p := range pods.Items {
		list = append(list, p.Name)
	}
	names("pods", list)
	secrets, err := client.CoreV1().Secrets(in.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list = nil
	for _, s := range secrets.Items {
		if !strings.HasPrefix(s.Name, "sh.helm.release.") {
			list = append(list, s.Name)
		}
	}
	names("secrets", list)
	return strings.Join(kinds, "; ")
}

// chartVersion is the chart's version (Chart.yaml).
func chartVersion(t *testing.T) string {
	t.Helper()
	v, err := ociimage.ChartVersion("../../charts/herald/Chart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (in *installation) helmOutput(args ...string) (string, error) {
	cmd := exec.Command(in.helm, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+in.kubeconfig, "HELM_CACHE_HOME="+filepath.Join(filepath.Dir(in.kubeconfig), "helm-cache"),
		"HELM_CONFIG_HOME="+filepath.Join(filepath.Dir(in.kubeconfig), "helm-config"), "HELM_DATA_HOME="+filepath.Join(filepath.Dir(in.kubeconfig), "helm-data"))
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (in *installation) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := in.helmOutput(args...)
	if err != nil {
		t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, out, in.podLogs())
	}
	return out
}

// podLogs is what the release's pods say, for failure messages.
func (in *installation) podLogs() string {
	ctx := context.Background()
	pods, err := client.CoreV1().Pods(in.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "--- pod %s (%s)\n", p.Name, p.Status.Phase)
		for _, cs := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, "  %s: ready %v, restarts %d, %s\n", cs.Name, cs.Ready, cs.RestartCount, stateOf(cs))
		}
		logs, _ := client.CoreV1().Pods(in.namespace).GetLogs(p.Name, &corev1.PodLogOptions{TailLines: ptr.To[int64](30)}).DoRaw(ctx)
		b.Write(logs)
	}
	events, _ := client.CoreV1().Events(in.namespace).List(ctx, metav1.ListOptions{})
	if events != nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "event %s/%s %s: %s\n", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	return b.String()
}

// readyPods waits until the release has n pods, all Ready.
func (in *installation) readyPods(t *testing.T, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Pods(in.namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + in.release})
		if err != nil {
			return false, nil
		}
		pods = nil
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && podReady(p) {
				pods = append(pods, p)
			}
		}
		return len(pods) == n && len(list.Items) == n, nil
	})
	if err != nil {
		t.Fatalf("%d Ready pods of the release, want %d: %v\n%s", len(pods), n, err, in.podLogs())
	}
	return pods
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// leaseHolder waits until one of pods holds the release's Lease.
func (in *installation) leaseHolder(t *testing.T, pods []corev1.Pod, timeout time.Duration) corev1.Pod {
	t.Helper()
	var holder string
	var found corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		lease, err := client.CoordinationV1().Leases(in.namespace).Get(ctx, in.release, metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return false, nil
		}
		holder = *lease.Spec.HolderIdentity
		for _, p := range pods {
			if strings.HasPrefix(holder, p.Name+"_") {
				found = p
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no pod of the release holds the Lease (holder %q): %v\n%s", holder, err, in.podLogs())
	}
	return found
}

// messagesAbout returns the top-level Slack messages that name what.
func (in *installation) messagesAbout(what string) []slackstandin.Message {
	var out []slackstandin.Message
	for _, m := range in.slack.Messages() {
		if m.ThreadTS == "" && !m.Ephemeral && (strings.Contains(m.Text, what) || strings.Contains(string(m.Blocks), what)) {
			out = append(out, m)
		}
	}
	return out
}

// awaitMessage waits for the first top-level Slack message naming what.
func (in *installation) awaitMessage(t *testing.T, what string, timeout time.Duration) slackstandin.Message {
	t.Helper()
	var got []slackstandin.Message
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		got = in.messagesAbout(what)
		return len(got) > 0, nil
	})
	if err != nil {
		t.Fatalf("no Slack message about %s within %s (%d messages in all)\n%s", what, timeout, len(in.slack.Messages()), in.podLogs())
	}
	return got[0]
}

// get fetches url from this machine (a pod's address is routed to the
// node) and returns the body of a 200 answer.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(body)
}
