package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/silence"
)

// cmdSilence creates, lists and expires Silence resources, so that
// muting a known problem is one command with an end time and an owner.
func (c cli) cmdSilence(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprintln(c.stderr, "herald silence: want create, list or expire")
		return 2
	}
	switch args[0] {
	case "create":
		return c.silenceCreate(ctx, args[1:])
	case "list", "ls":
		return c.silenceList(ctx, args[1:])
	case "expire":
		return c.silenceExpire(ctx, args[1:])
	}
	fmt.Fprintf(c.stderr, "herald silence: unknown command %q: want create, list or expire\n", args[0])
	return 2
}

// silenceClients are what the silence commands talk to the API with.
type silenceClients struct {
	dyn   dynamic.Interface
	typed *kube.Client
}

func newSilenceClients(kubeconfig string) (silenceClients, error) {
	rc, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig, Precedence: clientcmd.NewDefaultClientConfigLoadingRules().Precedence},
		&clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return silenceClients{}, err
	}
	rc.UserAgent = "herald/" + version + " silence"
	dyn, err := dynamic.NewForConfig(rc)
	if err != nil {
		return silenceClients{}, err
	}
	typed, err := kube.New(rc)
	if err != nil {
		return silenceClients{}, err
	}
	return silenceClients{dyn: dyn, typed: typed}, nil
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

// explain turns the API's answer into what to do about it.
func explain(err error, verb, namespace string) error {
	where := "in namespace " + namespace
	if namespace == "" {
		where = "in any namespace"
	}
	switch {
	case crdMissing(err):
		return errors.New("the Silence resource (silences.herald.io) is not installed in this cluster: install herald's Helm chart, or kubectl apply -f charts/herald/crds/")
	case apierrors.IsForbidden(err):
		return fmt.Errorf("you may not %s silences %s (%v); ask for the edit role there (herald's chart adds silences to view, edit and admin)", verb, where, apierrors.ReasonForError(err))
	}
	return err
}

func (c cli) silenceCreate(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("herald silence create", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	namespace := fs.String("namespace", "", "the namespace to silence (required); herald's own namespace silences cluster-wide")
	m := silence.Matchers{}
	fs.StringVar(&m.Workload, "workload", "", `the workload: "api" or "Deployment/api"`)
	fs.StringVar(&m.Name, "name", "", `a glob on the object's (or a pod's) name, e.g. "api-*"`)
	fs.StringVar(&m.Kind, "kind", "", "the object's kind (Pod, Node, Deployment, ...)")
	fs.StringVar(&m.Rule, "rule", "", "herald's rule name")
	fs.StringVar(&m.Reason, "reason", "", "the reason, e.g. CrashLoopBackOff")
	fs.StringVar(&m.Severity, "severity", "", "info, warning or critical")
	fs.StringVar(&m.Namespace, "match-namespace", "", "a glob on namespaces, for a cluster-wide silence in herald's namespace")
	selector := fs.String("selector", "", `a label selector, e.g. "app=api,tier!=db"`)
	length := fs.Duration("for", 0, "how long, e.g. 2h (or --until)")
	until := fs.String("until", "", "when it ends, RFC 3339 (or --for)")
	starts := fs.String("starts", "", "when it begins, RFC 3339 (default: now)")
	comment := fs.String("comment", "", "why (required): shown beside what it mutes")
	createdBy := fs.String("created-by", "", "who asks (default: your Kubernetes user name)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(format string, args ...any) int {
		fmt.Fprintf(c.stderr, "herald silence create: "+format+"\n", args...)
		return 2
	}
	if *namespace == "" {
		return fail("--namespace is required: a silence mutes the namespace it is created in")
	}
	if *comment == "" {
		return fail("--comment is required: say why, for whoever sees the muted alerts")
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
	default:
		return fail("--for or --until is required: every silence ends")
	}
	if *selector != "" {
		sel, err := metav1.ParseToLabelSelector(*selector)
		if err != nil {
			return fail("--selector: %v", err)
		}
		m.LabelSelector = sel
	}
	if m.Empty() {
		return fail("name what to silence: --workload, --name, --kind, --rule, --reason, --severity, --selector or --match-namespace")
	}
	clients, err := newSilenceClients(*kubeconfig)
	if err != nil {
		fmt.Fprintln(c.stderr, "herald silence create:", err)
		return 1
	}
	if *createdBy == "" {
		*createdBy = whoAmI(ctx, clients.typed)
	}
	spec := map[string]any{"startsAt": start.Format(time.RFC3339), "endsAt": end.UTC().Format(time.RFC3339), "comment": *comment}
	if *createdBy != "" {
		spec["createdBy"] = *createdBy
	}
	matchers, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&m)
	if err != nil {
		fmt.Fprintln(c.stderr, "herald silence create:", err)
		return 1
	}
	spec["matchers"] = matchers
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "herald.io/v1alpha1", "kind": "Silence",
		"metadata": map[string]any{"generateName": "silence-", "namespace": *namespace},
		"spec":     spec,
	}}
	created, err := clients.dyn.Resource(silence.Resource).Namespace(*namespace).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		fmt.Fprintln(c.stderr, "herald silence create:", explain(err, "create", *namespace))
		return 1
	}
	fmt.Fprintf(c.stdout, "silence %s/%s created: mutes until %s (in %s)\n", created.GetNamespace(), created.GetName(),
		end.UTC().Format(time.RFC3339), time.Until(end).Round(time.Second))
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

func (c cli) silenceList(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("herald silence list", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	namespace := fs.String("namespace", "", "one namespace (default: all, as -A)")
	fs.Bool("A", false, "all namespaces (the default)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	clients, err := newSilenceClients(*kubeconfig)
	if err != nil {
		fmt.Fprintln(c.stderr, "herald silence list:", err)
		return 1
	}
	list, err := clients.dyn.Resource(silence.Resource).Namespace(*namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintln(c.stderr, "herald silence list:", explain(err, "list", *namespace))
		return 1
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tSTATE\tENDS\tMATCHERS\tMUTED\tBY\tCOMMENT")
	for i := range list.Items {
		s, err := silence.Parse(&list.Items[i])
		if err != nil {
			fmt.Fprintf(tw, "%s\t%s\tinvalid\t\t%v\t\t\t\n", list.Items[i].GetNamespace(), list.Items[i].GetName(), err)
			continue
		}
		muted, _, _ := unstructured.NestedInt64(list.Items[i].Object, "status", "mutedIncidents")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.Namespace, s.Name, s.State(now), s.EndsAt.UTC().Format(time.RFC3339),
			s.Matchers.String(), muted, s.CreatedBy, s.Comment)
	}
	tw.Flush()
	return 0
}

func (c cli) silenceExpire(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("herald silence expire", flag.ContinueOnError)
	fs.SetOutput(c.stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
	namespace := fs.String("namespace", "", "the silence's namespace (required)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *namespace == "" || fs.NArg() != 1 {
		fmt.Fprintln(c.stderr, "herald silence expire: want --namespace NS and one silence name")
		return 2
	}
	name := fs.Arg(0)
	clients, err := newSilenceClients(*kubeconfig)
	if err != nil {
		fmt.Fprintln(c.stderr, "herald silence expire:", err)
		return 1
	}
	res := clients.dyn.Resource(silence.Resource).Namespace(*namespace)
	obj, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && !crdMissing(err) {
			fmt.Fprintf(c.stderr, "herald silence expire: no silence %s in namespace %s (herald silence list shows them)\n", name, *namespace)
			return 1
		}
		fmt.Fprintln(c.stderr, "herald silence expire:", explain(err, "get", *namespace))
		return 1
	}
	s, err := silence.Parse(obj)
	now := time.Now().UTC().Truncate(time.Second)
	if err != nil || !now.After(s.StartsAt) {
		// Not started yet (or unreadable): nothing to keep a record of.
		if err := res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			fmt.Fprintln(c.stderr, "herald silence expire:", explain(err, "delete", *namespace))
			return 1
		}
		fmt.Fprintf(c.stdout, "silence %s/%s had not started: deleted\n", *namespace, name)
		return 0
	}
	if s.State(now) == "expired" {
		fmt.Fprintf(c.stdout, "silence %s/%s had already expired at %s\n", *namespace, name, s.EndsAt.UTC().Format(time.RFC3339))
		return 0
	}
	patch := fmt.Sprintf(`{"spec":{"endsAt":%q}}`, now.Format(time.RFC3339))
	if _, err := res.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		fmt.Fprintln(c.stderr, "herald silence expire:", explain(err, "update", *namespace))
		return 1
	}
	fmt.Fprintf(c.stdout, "silence %s/%s expired: what it muted and is still firing goes out now\n", *namespace, name)
	return 0
}
