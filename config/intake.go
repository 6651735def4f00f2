package config

import (
	"fmt"
	"net"
	"slices"
	"time"
)

// Intake configures what herald takes in besides what it watches.
type Intake struct {
	// Alertmanager makes herald an Alertmanager webhook receiver (off
	// unless set).
	Alertmanager *AlertmanagerIntake `yaml:"alertmanager"`
}

// AlertmanagerIntake is the Alertmanager webhook receiver: alerts posted
// to it become herald incidents, with crash context, what changed,
// routes, silences and buttons like herald's own.
type AlertmanagerIntake struct {
	// Listen is the address it serves on (default :9094), a port of its
	// own: never the metrics port, which is not authenticated.
	Listen string `yaml:"listen"`
	// Token is the bearer token Alertmanager sends
	// (http_config.authorization.credentials_file), read from a file or
	// the environment.
	Token *SecretRef `yaml:"token"`
	// TLS serves HTTPS with certFile and keyFile; with clientCAFile,
	// a client certificate signed by it is required (Alertmanager's
	// http_config.tls_config). A token, a client CA or both are
	// required: nothing unauthenticated is taken in.
	TLS *ServerTLS `yaml:"tls"`
	// MaxBodyBytes caps one request's body (default 1 MiB; Alertmanager
	// sends one group of alerts per request).
	MaxBodyBytes int `yaml:"maxBodyBytes"`
	// Sinks receive the alerts no route takes (default: every sink).
	Sinks []string `yaml:"sinks"`
	// Repeat re-announces an alert still firing after this long (default
	// 0: never; Alertmanager's own repeats are never re-announced).
	Repeat time.Duration `yaml:"repeat"`
	// Objects map alerts of a name to the object their labels name, for
	// alerts of your own; the kube-state-metrics and kube-prometheus
	// labels (namespace with pod, deployment, statefulset, daemonset,
	// job_name, cronjob, persistentvolumeclaim,
	// horizontalpodautoscaler; node) are known without it.
	Objects []AlertObject `yaml:"objects"`
	// Agree names, per alert name, the reason of herald's own check
	// that sees the same problem: the two make one incident. Replaces
	// the built-in list (DefaultAgree) for the names it gives.
	Agree map[string]string `yaml:"agree"`
}

// ServerTLS is a TLS server's certificate and, optionally, the CA its
// clients' certificates must be signed by.
type ServerTLS struct {
	CertFile     string `yaml:"certFile"`
	KeyFile      string `yaml:"keyFile"`
	ClientCAFile string `yaml:"clientCAFile"`
}

// AlertObject maps the alerts named Alertname to an object of Kind whose
// name is the value of the label NameLabel, in the namespace of the label
// NamespaceLabel (default "namespace"; empty for a cluster-scoped kind
// such as Node); ContainerLabel names the container of a Pod.
type AlertObject struct {
	Alertname      string `yaml:"alertname"`
	Kind           string `yaml:"kind"`
	NameLabel      string `yaml:"nameLabel"`
	NamespaceLabel string `yaml:"namespaceLabel"`
	ContainerLabel string `yaml:"containerLabel"`
}

// AlertRule is the rule name of the incidents made from alerts taken in:
// routes, inhibit rules and silences select them by it.
const AlertRule = "alertmanager"

// Defaults of the Alertmanager receiver.
const (
	DefaultIntakeListen  = ":9094"
	DefaultIntakeMaxBody = 1 << 20
)

// DefaultAgree pairs kube-prometheus' alerts with the reasons of herald's
// detectors that see the same problem.
var DefaultAgree = map[string]string{
	"KubePodCrashLooping":        "CrashLoopBackOff",
	"KubeJobFailed":              "JobFailed",
	"KubeDeploymentRolloutStuck": "ProgressDeadlineExceeded",
	"KubeNodeNotReady":           "NodeNotReady",
	"KubeHpaMaxedOut":            "AtMaxReplicas",
	"KubeJobNotCompleted":        "JobRunningLong",
	// kube-prometheus says both levels under one name; herald's
	// VolumeFillingUp is the warning one (VolumeAlmostFull the critical).
	"KubePersistentVolumeFillingUp": "VolumeFillingUp",
}

// AlertKinds are the kinds an alert can be mapped to.
var AlertKinds = []string{"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Node", "PersistentVolumeClaim", "HorizontalPodAutoscaler", "Service"}

func (in *AlertmanagerIntake) applyDefaults() {
	if in == nil {
		return
	}
	if in.Listen == "" {
		in.Listen = DefaultIntakeListen
	}
	if in.MaxBodyBytes == 0 {
		in.MaxBodyBytes = DefaultIntakeMaxBody
	}
	for i := range in.Objects {
		if in.Objects[i].NamespaceLabel == "" && in.Objects[i].Kind != "Node" {
			in.Objects[i].NamespaceLabel = "namespace"
		}
	}
}

// AgreeFor returns the reason of herald's check that agrees with alerts
// named name ("" if none).
func (in *AlertmanagerIntake) AgreeFor(name string) string {
	if r, ok := in.Agree[name]; ok {
		return r
	}
	return DefaultAgreeFor(name)
}

// DefaultAgreeFor is AgreeFor of a receiver with no agree: of its own.
func DefaultAgreeFor(name string) string { return DefaultAgree[name] }

func (c *Config) validateIntake(sinkNames map[string]bool, add func(path, format string, args ...any)) {
	in := c.Intake.Alertmanager
	if in == nil {
		return
	}
	const p = "intake.alertmanager"
	for i, r := range c.Rules {
		if r.Name == AlertRule {
			add(fmt.Sprintf("rules[%d].name", i), "%q names the incidents of the alerts taken in (intake.alertmanager); give the rule another name", AlertRule)
		}
	}
	if _, _, err := net.SplitHostPort(in.Listen); err != nil {
		add(p+".listen", "must be host:port or :port, got %q", in.Listen)
	}
	if in.Token == nil && (in.TLS == nil || in.TLS.ClientCAFile == "") {
		add(p, "needs token (a bearer token from a file or the environment) or tls.clientCAFile (client certificates): herald takes in nothing unauthenticated")
	}
	if in.Token != nil {
		c.resolveSecret(p+".token", in.Token, add)
	}
	if t := in.TLS; t != nil {
		if t.CertFile == "" || t.KeyFile == "" {
			add(p+".tls", "needs certFile and keyFile (the server's certificate)")
		}
		c.validateTLS(p+".tls", TLSConfig{CAFile: t.ClientCAFile, CertFile: t.CertFile, KeyFile: t.KeyFile}, add)
	}
	if in.MaxBodyBytes < 1<<10 || in.MaxBodyBytes > 64<<20 {
		add(p+".maxBodyBytes", "must be between 1 KiB and 64 MiB, got %d", in.MaxBodyBytes)
	}
	if in.Repeat < 0 {
		add(p+".repeat", "must not be negative")
	}
	for i, s := range in.Sinks {
		if !sinkNames[s] {
			add(fmt.Sprintf("%s.sinks[%d]", p, i), "no sink is named %q", s)
		}
	}
	for i, o := range in.Objects {
		q := fmt.Sprintf("%s.objects[%d]", p, i)
		if o.Alertname == "" {
			add(q+".alertname", "must name the alerts it maps")
		}
		if !slices.Contains(AlertKinds, o.Kind) {
			add(q+".kind", "must be one of %v, got %q", AlertKinds, o.Kind)
		}
		for _, l := range []struct{ field, v string }{{"nameLabel", o.NameLabel}, {"namespaceLabel", o.NamespaceLabel}, {"containerLabel", o.ContainerLabel}} {
			if l.v != "" && !labelNameRE.MatchString(l.v) {
				add(q+"."+l.field, "%q is not a Prometheus label name", l.v)
			}
		}
		if o.NameLabel == "" {
			add(q+".nameLabel", "must name the label that holds the object's name")
		}
	}
}
