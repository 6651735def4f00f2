package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/silence"
	"github.com/herald-k8s/herald/internal/termsafe"
)

// silenceUsage is herald silence's own usage; each subcommand has its
// flags' too (herald silence create --help).
const silenceUsage = `Usage:
  herald silence create (--namespace NS | --all-namespaces) (--workload W | --name GLOB | --rule R | ...) (--for 2h | --until TIME) --comment TEXT
  herald silence create --incident ID (--for 2h | --until TIME) --comment TEXT
  herald silence list [--namespace NS | -A]
  herald silence expire (--namespace NS | --all-namespaces) NAME

Each takes --kubeconfig FILE and --context NAME; herald silence COMMAND --help lists its flags.
`

// cmdSilence creates, lists and expires Silence and ClusterSilence
// resources, so that muting a known problem is one command with an end
// time and an owner.
func (c cli) cmdSilence(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(c.stderr, "herald silence: want create, list or expire\n\n"+silenceUsage)
		return 2
	}
	switch args[0] {
	case "create":
		return c.silenceCreate(ctx, args[1:])
	case "list", "ls":
		return c.silenceList(ctx, args[1:])
	case "expire":
		return c.silenceExpire(ctx, args[1:])
	case "help", "-h", "-help", "--help":
		fmt.Fprint(c.stdout, silenceUsage)
		return 0
	}
	fmt.Fprintf(c.stderr, "herald silence: unknown command %q: want create, list or expire\n\n%s", args[0], silenceUsage)
	return 2
}

// silenceClients are what the silence commands talk to the API with.
type silenceClients struct {
	dyn   dynamic.Interface
	typed *kube.Client
	where string // the cluster, for messages: "context kind-prod"
}

// resource is where silences live: a namespace's Silences ("" all
// namespaces), or the ClusterSilences.
func (c silenceClients) resource(namespace string, cluster bool) dynamic.ResourceInterface {
	if cluster {
		return c.dyn.Resource(silence.ClusterResource)
	}
	return c.dyn.Resource(silence.Resource).Namespace(namespace)
}

func newSilenceClients(kf kubeFlags) (silenceClients, error) {
	rc, where, err := kf.load("herald/" + version + " silence")
	if err != nil {
		return silenceClients{}, err
	}
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return silenceClients{}, err
	}
	typed, err := kube.New(rc)
	if err != nil {
		return silenceClients{}, err
	}
	return silenceClients{dyn: dyn, typed: typed, where: where}, nil
}

// crdMissing says the API server does not serve silences at all: a 404
// that names no object (a missing Silence names itself).
func crdMissing(err error) bool {
	if meta.IsNoMatchError(err) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}

// explain turns the API's answer into what to do about it; cluster says
// it was about ClusterSilences.
func explain(err error, verb, namespace string, cluster bool) error {
	where := "in namespace " + namespace
	if namespace == "" {
		where = "in any namespace"
	}
	switch {
	case crdMissing(err) && cluster:
		return errors.New("the ClusterSilence resource (clustersilences.herald.io) is not installed in this cluster: kubectl apply -f charts/herald/crds/ (helm upgrade does not install a chart's new CRDs)")
	case crdMissing(err):
		return errors.New("the Silence resource (silences.herald.io) is not installed in this cluster: install herald's Helm chart, or kubectl apply -f charts/herald/crds/")
	case apierrors.IsForbidden(err) && cluster:
		return fmt.Errorf("you may not %s clustersilences (%v): muting across namespaces is a permission of its own; ask herald's operators for the chart's <fullname>-clustersilences-admin ClusterRole, or create a Silence in your namespace", verb, apierrors.ReasonForError(err))
	case apierrors.IsForbidden(err):
		return fmt.Errorf("you may not %s silences %s (%v); ask for the edit role there (herald's chart adds silences to view, edit and admin)", verb, where, apierrors.ReasonForError(err))
	}
	return err
}

func (c cli) silenceCreate(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("herald silence create", flag.ContinueOnError)
	var kf kubeFlags
	kf.register(fs)
	namespace := fs.String("namespace", "", "the namespace to silence: a Silence there mutes it and nothing else (or --all-namespaces)")
	cluster := fs.Bool("all-namespaces", false, "create a ClusterSilence, which mutes any namespace (narrow it with --match-namespace) and nodes: a permission of its own")
	fs.BoolVar(cluster, "A", false, "short for --all-namespaces")
	m := silence.Matchers{}
	fs.StringVar(&m.Workload, "workload", "", `the workload: "api" or "Deployment/api"`)
	fs.StringVar(&m.Name, "name", "", `a glob on the object's (or a pod's) name, e.g. "api-*"`)
	fs.StringVar(&m.Kind, "kind", "", "the object's kind (Pod, Node, Deployment, ...)")
	fs.StringVar(&m.Rule, "rule", "", "herald's rule name")
	fs.StringVar(&m.Reason, "reason", "", "the reason, e.g. CrashLoopBackOff")
	fs.StringVar(&m.Severity, "severity", "", "info, warning or critical")
	fs.StringVar(&m.Namespace, "match-namespace", "", `a glob on namespaces, e.g. "batch-*" (with --all-namespaces)`)
	selector := fs.String("selector", "", `a label selector, e.g. "app=api,tier!=db"`)
	length := fs.Duration("for", 0, "how long, e.g. 2h (or --until)")
	until := fs.String("until", "", "when it ends, RFC 3339 (or --for)")
	starts := fs.String("starts", "", "when it begins, RFC 3339 (default: now)")
	comment := fs.String("comment", "", "why (required): shown beside what it mutes")
	createdBy := fs.String("created-by", "", "who asks (default: your Kubernetes user name)")
	var byID incidentRef
	byID.register(fs)
	pos, code, ok := parseFlags(fs, "herald silence create (--namespace NS | --all-namespaces) (--workload W | --name GLOB | --rule R | --incident ID | ...) (--for 2h | --until TIME) --comment TEXT", args, c.stdout, c.stderr)
	if !ok {
		return code
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(c.stderr, "herald silence create: "+format+"\n", args...)
		return 2
	}
	switch {
	case len(pos) > 0:
		return fail("unexpected argument %q: what to silence is given by flags (herald silence create --help)", pos[0])
	case byID.id != "" && (!m.Empty() || *selector != ""):
		return fail("--incident names what to silence (its object or workload and rule): give it alone, without --workload, --name, --kind, --rule, --reason, --severity, --selector or --match-namespace")
	case byID.id != "":
		// The namespace (and whether it takes a ClusterSilence) is the
		// incident's: checked once it is read.
	case *cluster && *namespace != "":
		return fail("give --namespace (a Silence, muting that namespace) or --all-namespaces (a ClusterSilence), not both")
	}
	// Everything missing is said at once.
	var missing []string
	if m.Empty() && byID.id == "" && *selector == "" {
		missing = append(missing, "what to silence (--workload, --name, --kind, --rule, --reason, --severity, --selector, --match-namespace or --incident)")
	}
	if *length <= 0 && *until == "" {
		missing = append(missing, "--for or --until (every silence ends)")
	}
	if *comment == "" {
		missing = append(missing, "--comment (why, for whoever sees the muted alerts)")
	}
	if len(missing) > 0 {
		return fail("missing %s", strings.Join(missing, "; "))
	}
	if !*cluster && *namespace == "" && byID.id == "" {
		// As kubectl does: the namespace of the kubeconfig's context.
		ns, from, err := kf.namespace()
		if err != nil {
			return fail("--namespace: none given, and %v; a silence mutes the namespace it is created in (or --all-namespaces, for a ClusterSilence)", err)
		}
		*namespace = ns
		fmt.Fprintf(c.stderr, "herald silence create: namespace %s (%s; --namespace to choose another)\n", ns, from)
	}
	if !*cluster && m.Namespace != "" && m.Namespace != *namespace && byID.id == "" {
		return fail("--match-namespace narrows a ClusterSilence (--all-namespaces): a Silence in %s mutes %s and nothing else", *namespace, *namespace)
	}
	start := time.Now().UTC().Truncate(time.Second)
	if *starts != "" {
		t, err := time.Parse(time.RFC3339, *starts)
		if err != nil {
			return fail("--starts %q: want an RFC 3339 time such as 2026-11-24T08:00:00Z", *starts)
		}
		start = t
	}
	var end time.Time
	switch {
	case *length > 0 && *until != "":
		return fail("give --for or --until, not both")
	case *length > 0:
		end = start.Add(*length)
	case *until != "":
		t, err := time.Parse(time.RFC3339, *until)
		if err != nil {
			return fail("--until %q: want an RFC 3339 time such as 2026-11-24T08:00:00Z", *until)
		}
		end = t
	}
	if *selector != "" {
		sel, err := metav1.ParseToLabelSelector(*selector)
		if err != nil {
			return fail("--selector: %v", err)
		}
		m.LabelSelector = sel
	}
	clients, err := newSilenceClients(kf)
	if err != nil {
		fmt.Fprintln(c.stderr, "herald silence create:", err)
		return 1
	}
	if byID.id != "" {
		inc, err := byID.find(ctx, clients.typed, clients.where)
		if err == nil {
			m, err = silenceFor(inc, namespace, cluster)
		}
		if err != nil {
			fmt.Fprintln(c.stderr, "herald silence create:", err)
			return 1
		}
	}
	if *createdBy == "" {
		*createdBy = whoAmI(ctx, clients.typed)
	}
	obj, err := silence.NewSilence(*namespace, "", m, start, end, *comment, *createdBy, nil)
	if err != nil {
		fmt.Fprintln(c.stderr, "herald silence create:", err)
		return 1
	}
	if *cluster {
		obj.SetKind("ClusterSilence")
		obj.SetNamespace("")
	}
	created, err := clients.resource(*namespace, *cluster).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		fmt.Fprintln(c.stderr, "herald silence create:", explain(err, "create", *namespace, *cluster))
		return 1
	}
	what := "silence " + created.GetNamespace() + "/" + created.GetName()
	if *cluster {
		what = "clustersilence " + created.GetName()
	}
	fmt.Fprintf(c.stdout, "%s created: mutes until %s (in %s)\n", what, end.UTC().Format(time.RFC3339), time.Until(end).Round(time.Second))
	if byID.id != "" {
		fmt.Fprintf(c.stdout, "it matches incident %s: %s\n", termsafe.Line(byID.id), termsafe.Line(m.String())) // from the ledger
	}
	return 0
}

// whoAmI asks the API server who the caller is ("" if it cannot say).
func whoAmI(ctx context.Context, client *kube.Client) string {
	r, err := client.WhoAmI(ctx)
	if err != nil {
		return os.Getenv("USER")
	}
	return r.Status.UserInfo.Username
}
