// Command demo shows herald's main job on a machine with nothing but Go
// (and root, for the real node): it starts a local control plane with a
// real node (kubelet, containerd, scheduler, controller-manager), runs the
// herald binary against it with examples/demo.yaml, and prints herald's
// notifications as real containers fail: a Deployment's pods crashing
// together (one alert with the crashed container's log lines, one paced
// update), a container killed for memory (one OOMKilled alert), a crash
// loop that recovers (resolved after the settle time), and a crash-looping
// pod that is deleted; the same alerts active in a real Alertmanager; and
// a Prometheus-style alert that Alertmanager sends to herald.
//
//	go run ./internal/demo -herald bin/herald -config examples/demo.yaml
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/herald-k8s/herald/internal/testenv"
)

const ns = "demo"

func main() {
	heraldBin := flag.String("herald", "bin/herald", "the herald binary")
	configPath := flag.String("config", "examples/demo.yaml", "herald's configuration")
	flag.Parse()
	if err := run(*heraldBin, *configPath); err != nil {
		fmt.Fprintln(os.Stderr, "demo failed:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) {
	fmt.Printf("\033[1m==> "+format+"\033[0m\n", args...)
}

func run(heraldBin, configPath string) error {
	ctx := context.Background()
	say("starting a local cluster: etcd %s, kube-apiserver, kube-scheduler, kube-controller-manager and a real node (kubelet %s, containerd, runc) in a network namespace; the first run builds them, which takes minutes", testenv.EtcdVersion, testenv.KubeVersion)
	env, err := testenv.Start(ctx, testenv.WithNode(testenv.Options{Logf: func(f string, a ...any) { fmt.Printf("    "+f+"\n", a...) }}))
	if err != nil {
		return err
	}
	defer func() {
		say("stopping the control plane")
		env.Stop()
	}()
	client, err := env.Client()
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(env.Dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	say("installing the chart's Silence and ClusterSilence CRDs (charts/herald/crds/)")
	for _, crd := range []string{"silences.herald.io.yaml", "clustersilences.herald.io.yaml"} {
		if err := env.InstallCRDs(ctx, "charts/herald/crds/"+crd); err != nil {
			return err
		}
	}

	say("starting Alertmanager %s: herald's alertmanager sink posts there, and it sends every alert to herald's receiver (Prometheus alerts in)", testenv.AlertmanagerVersion)
	am, intakeAddr, tokenFile, err := alertmanagerForDemo(ctx, env.Dir)
	if err != nil {
		return err
	}
	defer am.Stop()
	if configPath, err = withAlertmanager(configPath, env.Dir, am.URL, intakeConfig(intakeAddr, tokenFile)); err != nil {
		return err
	}

	say("starting a Slack stand-in on loopback (Web API and Socket Mode): herald posts alerts there with buttons, and the demo presses one")
	sl, configPath, err := startSlack(configPath)
	if err != nil {
		return err
	}
	defer sl.Close()

	say("starting herald: %s run --config %s", heraldBin, configPath)
	logPath := filepath.Join(os.TempDir(), "herald-demo.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	herald := exec.Command(heraldBin, "run", "--config", configPath, "--kubeconfig", kubeconfig, "--log-format", "text", "--metrics-addr", "127.0.0.1:0")
	herald.Stderr = logFile
	stdout, err := herald.StdoutPipe()
	if err != nil {
		return err
	}
	if err := herald.Start(); err != nil {
		return err
	}
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Printf("    \033[32mherald>\033[0m %s\n", sc.Text())
			lines <- sc.Text()
		}
		close(lines)
	}()
	defer func() {
		say("stopping herald (SIGTERM); its logs are in %s", logPath)
		herald.Process.Signal(syscall.SIGTERM)
		herald.Wait()
	}()

	say("waiting for herald to lead and start its workers")
	if err := waitForLog(logPath, `msg="starting workers"`, 60*time.Second); err != nil {
		return err
	}
	say("the namespace %s belongs to the storefront team (annotation herald.io/team: storefront): the route storefront sends its incidents to the console and Alertmanager", ns)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Annotations: map[string]string{"herald.io/team": "storefront"}}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	sent := 0
	seen := func(lines []string) { // a notification's first line; the rest is its context
		for _, l := range lines {
			if strings.Contains(l, "FIRING") || strings.Contains(l, "UPDATED") || strings.Contains(l, "RESOLVED") {
				sent++
			}
		}
	}

	say("a storm: the Deployment web's 3 containers log their start and exit 1, all at once; the kubelet restarts them into CrashLoopBackOff. Expect one FIRING with the crashed container's real log lines (its password and a bare Shopify token redacted), a hint and the rule's Logs link filled with the namespace, the pods' app label and the incident's time window, then at most one UPDATED per 10s update interval (without pacing: one message per pod and restart)")
	start := time.Now()
	if err := createDeployment(ctx, client, "web", 3, workload("-log", "INFO starting web v2,INFO config: db_password=hunter2 pool=10,INFO shop sync ready 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,ERROR dial tcp db:5432: connect: connection refused,FATAL cannot reach the database", "-exit", "1"), nil); err != nil {
		return err
	}
	if err := expect(lines, seen, 90*time.Second, "FIRING", "demo/web"); err != nil {
		return err
	}
	if err := expect(lines, seen, 5*time.Second, "links: Logs https://grafana.example.com/explore?left=", "namespace=%5C%22demo%5C%22,app=%5C%22web%5C%22"); err != nil {
		return err
	}
	say("first alert %s after the Deployment was created (the kubelet's first restart and back-off)", time.Since(start).Round(time.Second))
	if err := showAlertmanager(am.URL, "CrashLoopBackOff"); err != nil {
		return err
	}
	if err := buttonScene(ctx, sl, heraldBin, kubeconfig, lines, seen); err != nil {
		return err
	}
	if err := canaryScene(ctx, client, heraldBin, configPath, kubeconfig); err != nil {
		return err
	}
	if err := rolloutScene(ctx, client, lines, seen); err != nil {
		return err
	}

	say("a memory hog: cache's container allocates 256 MiB under a 48Mi limit and the kernel kills it, again and again. Expect one FIRING for OOMKilled with the limit, and no crash-loop alert beside it")
	hog := workload("-alloc-mb", "256")
	hog.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("48Mi")}
	if err := createDeployment(ctx, client, "cache", 1, hog, nil); err != nil {
		return err
	}
	if err := expect(lines, seen, 90*time.Second, "FIRING", "OOMKilled", "demo/cache"); err != nil {
		return err
	}

	say("a crash loop that recovers: api fails its first 3 starts, then runs and is ready. Expect one FIRING and, once it has been ready for the 10s settle time, one RESOLVED; nothing in between")
	start = time.Now()
	api := workload("-fail-first", "3", "-state", "/state/starts", "-exit", "1", "-ready-port", "8080", "-log", "INFO starting api,ERROR migration lock held by another instance")
	api.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt(8080)}}, PeriodSeconds: 1}
	api.VolumeMounts = []corev1.VolumeMount{{Name: "state", MountPath: "/state"}}
	if err := createDeployment(ctx, client, "api", 1, api, []corev1.Volume{{Name: "state", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}); err != nil {
		return err
	}
	if err := expect(lines, seen, 90*time.Second, "FIRING", "demo/api"); err != nil {
		return err
	}
	if err := expectOnly(lines, seen, 150*time.Second, "demo/api", "RESOLVED"); err != nil {
		return err
	}
	say("api resolved, %s after it was created", time.Since(start).Round(time.Second))

	say("a bare pod, worker, crash-loops and is then deleted: expect FIRING, then RESOLVED at once (a deleted pod cannot come back)")
	worker := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "worker", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{workload("-log", "ERROR queue not found: jobs", "-exit", "2")}, TerminationGracePeriodSeconds: ptr.To[int64](1)},
	}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, worker, metav1.CreateOptions{}); err != nil {
		return err
	}
	if err := expect(lines, seen, 90*time.Second, "FIRING", "demo/worker"); err != nil {
		return err
	}
	if err := client.CoreV1().Pods(ns).Delete(ctx, "worker", metav1.DeleteOptions{}); err != nil {
		return err
	}
	if err := expect(lines, seen, 30*time.Second, "RESOLVED", "demo/worker"); err != nil {
		return err
	}
	if err := silenceScene(ctx, client, heraldBin, kubeconfig, lines, seen); err != nil {
		return err
	}
	if err := volumeScene(ctx, client, env.Node.Name, env.Dir, lines, seen); err != nil {
		return err
	}
	// Before the CronJob scene, whose quota allows the namespace no Jobs.
	if err := jobScene(ctx, client, lines, seen); err != nil {
		return err
	}
	if err := cronJobScene(ctx, client, lines, seen); err != nil {
		return err
	}
	if err := intakeScene(am.URL, lines, seen); err != nil {
		return err
	}
	say("demo complete: %d notifications for 11 incidents on a real node: 3 pods in a storm silenced from its Slack button, a bad rollout and what changed, repeated OOM kills and crash cycles, a silenced crash loop, a volume filling up (forecast, then almost full), a Job that ran too long, a CronJob whose runs a quota refused, a Prometheus alert taken in from Alertmanager", sent)
	return nil
}

// canaryScene shows an exclusion and a route at work: a canary crashes
// like web, and herald test --live --route says why it is not alerted on
// and where web's alert went.
func canaryScene(ctx context.Context, client kubernetes.Interface, heraldBin, configPath, kubeconfig string) error {
	say("web-canary crashes too, but pod-crashloop excludes names matching *-canary: expect no alert for it. herald test --live --route says why, and where web's alert went")
	if err := createDeployment(ctx, client, "web-canary", 1, workload("-log", "ERROR canary build: feature flag missing", "-exit", "1"), nil); err != nil {
		return err
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, err := exec.Command(heraldBin, "test", "-f", configPath, "--kubeconfig", kubeconfig, "--route").CombinedOutput()
		if err != nil {
			return fmt.Errorf("herald test --live --route: %w: %s", err, out)
		}
		text := string(out)
		if strings.Contains(text, "demo/web-canary") && strings.Contains(text, "EXCLUDED") {
			for _, block := range strings.Split(text, "\nPod ") {
				if strings.HasPrefix(block, "demo/web-") && (strings.Contains(block, "EXCLUDED") || strings.Contains(block, "goes:")) {
					lines := strings.Split(strings.TrimRight(block, "\n"), "\n")
					fmt.Printf("    Pod %s\n", strings.Join(lines[:min(len(lines), 9)], "\n    "))
					break
				}
			}
			for _, l := range strings.Split(text, "\n") {
				if strings.Contains(l, "demo/web-canary") {
					fmt.Printf("    %s\n", l)
				}
			}
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("web-canary never crash-looped within 90s:\n%s", text)
		}
		time.Sleep(3 * time.Second) // the kubelet's restarts are its own pace
	}
}

// withAlertmanager writes a copy of the configuration whose alertmanager
// sink points at url, the Alertmanager the demo started.
func withAlertmanager(configPath, dir, url, more string) (string, error) {
	data, err := os.ReadFile(configPath)
	if err != nil {
		return "", err
	}
	const placeholder = "http://127.0.0.1:9093"
	if !strings.Contains(string(data), placeholder) {
		return "", fmt.Errorf("%s has no alertmanager sink at %s", configPath, placeholder)
	}
	out := filepath.Join(dir, "herald-demo.yaml")
	return out, os.WriteFile(out, []byte(strings.ReplaceAll(string(data), placeholder, url)+more), 0o600)
}

// amAlert is an alert as Alertmanager's API shows it.
type amAlert struct {
	Labels map[string]string      `json:"labels"`
	Status struct{ State string } `json:"status"`
}

// showAlertmanager prints the alerts Alertmanager holds (its own API),
// waiting up to 10 s for one named alertname.
func showAlertmanager(url, alertname string) error {
	var alerts []amAlert
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(url + "/api/v2/alerts")
		if err != nil {
			return err
		}
		err = json.NewDecoder(resp.Body).Decode(&alerts)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if slices.ContainsFunc(alerts, func(a amAlert) bool { return a.Labels["alertname"] == alertname }) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no %s alert in Alertmanager within 10s", alertname)
		}
		time.Sleep(200 * time.Millisecond)
	}
	say("Alertmanager (GET %s/api/v2/alerts) holds:", url)
	for _, a := range alerts {
		var labels []string
		for _, k := range slices.Sorted(maps.Keys(a.Labels)) {
			labels = append(labels, k+"="+a.Labels[k])
		}
		fmt.Printf("    \033[35malertmanager>\033[0m %s {%s}\n", a.Status.State, strings.Join(labels, ", "))
	}
	return nil
}

// waitForLog polls herald's log file until it holds text.
func waitForLog(path, text string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if data, err := os.ReadFile(path); err == nil && strings.Contains(string(data), text) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("herald did not log %s within %s (see %s)", text, timeout, path)
}

// expect waits for herald to print a line containing every word; the
// lines it read on the way (this one included) go to seen.
func expect(lines <-chan string, seen func([]string), within time.Duration, words ...string) error {
	timeout := time.After(within)
	var read []string
	defer func() { seen(read) }()
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				return fmt.Errorf("herald exited before printing %v", words)
			}
			read = append(read, line)
			match := true
			for _, w := range words {
				match = match && strings.Contains(line, w)
			}
			if match {
				return nil
			}
		case <-timeout:
			return fmt.Errorf("no notification with %v within %s", words, within)
		}
	}
}

// expectOnly is expect for object's next line, which must say word:
// anything else about object before it is an error.
func expectOnly(lines <-chan string, seen func([]string), within time.Duration, object, word string) error {
	var read []string
	err := expect(lines, func(l []string) { read = l; seen(l) }, within, object)
	if err == nil && !strings.Contains(read[len(read)-1], word) {
		return fmt.Errorf("herald printed %q, want %s for %s", read[len(read)-1], word, object)
	}
	return err
}

var workload = testenv.WorkloadContainer

// createDeployment makes a Deployment of replicas pods of c; the real
// controller-manager, scheduler and kubelet do the rest.
func createDeployment(ctx context.Context, client kubernetes.Interface, name string, replicas int32, c corev1.Container, volumes []corev1.Volume) error {
	_, err := client.AppsV1().Deployments(ns).Create(ctx, testenv.WorkloadDeployment(ns, name, replicas, c, volumes...), metav1.CreateOptions{})
	return err
}
