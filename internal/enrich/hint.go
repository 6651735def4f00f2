package enrich

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/herald-k8s/herald/internal/incident"
)

// exitHints say what an exit code usually means: the first question a
// reader of a crash alert has.
var exitHints = map[int]string{
	0:   "exit code 0: the program finished, and the pod's restart policy started it again; is it a job running as a Deployment?",
	1:   "exit code 1: the program failed by itself; its last log lines usually say why.",
	2:   "exit code 2: usually a wrong command-line argument or a shell error; check the container's command and args.",
	126: "exit code 126: the command exists but cannot be run (permissions, or a binary for another platform).",
	127: "exit code 127: command not found; check the image's entrypoint, the container's command and PATH.",
	134: "exit code 134 (SIGABRT): the program aborted itself (a failed assertion or abort()).",
	137: "exit code 137 (SIGKILL): killed from outside, by the out-of-memory killer or after not stopping in time; check memory use and the liveness probe.",
	139: "exit code 139 (SIGSEGV): the program crashed on an invalid memory access.",
	143: "exit code 143 (SIGTERM): asked to stop (a failing liveness probe, an eviction or a shutdown), and it did.",
}

var (
	missingRef = regexp.MustCompile(`(secret|configmap) "([^"]+)" not found`)
	missingKey = regexp.MustCompile(`couldn't find key (\S+) in (Secret|ConfigMap) (\S+)`)
	pressure   = regexp.MustCompile(`low on resource: (\w+)`)
)

// Hint is one plain sentence for an incident: what its reason or exit code
// usually means and what to look at.
func Hint(inc incident.Incident) string {
	f := inc.Facts
	switch inc.Problem() {
	case "OOMKilled":
		if l := f["memoryLimit"]; l != "" {
			return "The container used more memory than its limit (" + l + ") and was killed: raise resources.limits.memory, or find what grows."
		}
		return "The container was killed for running out of memory: set a memory limit above what it needs, or find what grows."
	case "CreateContainerConfigError":
		msg := f["message"]
		if m := missingKey.FindStringSubmatch(msg); m != nil {
			return fmt.Sprintf("The container cannot start: %s %s has no key %s; add the key or fix the reference.", m[2], m[3], m[1])
		}
		if m := missingRef.FindStringSubmatch(msg); m != nil {
			kind := map[string]string{"secret": "Secret", "configmap": "ConfigMap"}[m[1]]
			return fmt.Sprintf("The container cannot start: %s %s does not exist in namespace %s; create it or fix the reference.", kind, m[2], inc.Object.Namespace)
		}
		return "The container cannot start: its configuration (a Secret, a ConfigMap, a volume) is wrong; the message says which."
	case "ImagePullBackOff":
		msg := strings.ToLower(f["message"])
		switch {
		case strings.Contains(msg, "unauthorized") || strings.Contains(msg, "authentication required") || strings.Contains(msg, "denied") || strings.Contains(msg, "403"):
			return "The registry refused the pull: check imagePullSecrets and the registry credentials."
		case strings.Contains(msg, "not found") || strings.Contains(msg, "manifest unknown"):
			return "The image or tag does not exist: check the image name and tag."
		}
		return "The image cannot be pulled: check its name, tag, the registry's reachability and imagePullSecrets."
	case "Evicted":
		if m := pressure.FindStringSubmatch(f["message"]); m != nil {
			return "The kubelet evicted the pod because its node was low on " + m[1] + ": set requests that reflect real use, or give the node more."
		}
		return "The kubelet evicted the pod under node pressure; the message says which resource."
	case "MissedSchedule":
		if f["activeJob"] != "" {
			return "The previous run is still going and the CronJob forbids two at once: see why Job " + f["activeJob"] + " takes so long, or delete it; set activeDeadlineSeconds on the job template to bound a run."
		}
		return "No Job was created for this run: kubectl describe cronjob shows the controller's events (FailedCreate: a quota or an admission webhook refused the Job); no events at all: the control plane's controller-manager may be down."
	case "CertificateExpiring", "CertificateNotReady":
		return "kubectl describe certificate " + inc.Object.Name + " -n " + inc.Object.Namespace + " names the failing CertificateRequest; its Order and Challenges (kubectl get orders,challenges -n " + inc.Object.Namespace + ") say why the issuer refused. To retry at once: cmctl renew " + inc.Object.Name + " -n " + inc.Object.Namespace + "."
	case "NoReadyEndpoints":
		if f["notReady"] != "" && f["notReady"] != "0" {
			return "Its pods run but fail their readiness probe: kubectl describe pod shows the probe's last failure; kubectl get endpointslices -l kubernetes.io/service-name=" + inc.Object.Name + " -n " + inc.Object.Namespace + " lists them."
		}
		return "No running pod matches the Service's selector (" + f["selector"] + "): compare it with the pods' labels (kubectl get pods -l '" + f["selector"] + "' -n " + inc.Object.Namespace + "), or the workload is scaled to zero."
	case "VolumeFillingUp", "VolumeAlmostFull":
		pod := "<pod>"
		if f["pod"] != "" {
			pod = f["pod"]
		}
		return "Find what grows, inside the pod (the mount path is in its spec; images without a shell have no du): kubectl exec " + pod + " -n " + inc.Object.Namespace + " -- sh -c 'du -xsh <mount path>/*'. If the data is needed, expand the claim (its StorageClass must allow volume expansion): kubectl patch pvc " + inc.Object.Name + " -n " + inc.Object.Namespace + ` -p '{"spec":{"resources":{"requests":{"storage":"<larger>"}}}}'. If not, remove what the application no longer needs through the application itself (its retention, its cleanup): deleting a database's files by hand can corrupt it.`
	case "JobRunningLong":
		return "A Job past its usual time is usually waiting on something (a lock, a network call without a timeout, a volume): kubectl logs job/" + inc.Object.Name + " -n " + inc.Object.Namespace + " says what; activeDeadlineSeconds in its spec makes the controller end runs that hang."
	case "AtMaxReplicas":
		return "The workload needs more replicas than maxReplicas allows: raise maxReplicas (if the nodes have room), or find why each replica does less than before."
	case "CrashLoopBackOff", "Restarting":
		code, err := strconv.Atoi(f["exitCode"])
		if err != nil {
			return "The container keeps crashing; its last log lines usually say why."
		}
		if h, ok := exitHints[code]; ok {
			return strings.ToUpper(h[:1]) + h[1:]
		}
		if code > 128 && code < 160 {
			return fmt.Sprintf("Exit code %d: killed by signal %d.", code, code-128)
		}
		return fmt.Sprintf("Exit code %d: the program's own failure code; its last log lines usually say why.", code)
	}
	return ""
}
