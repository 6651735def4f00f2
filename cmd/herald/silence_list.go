package main

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/herald-k8s/herald/internal/silence"
	"github.com/herald-k8s/herald/internal/termsafe"
)

// silenceList lists the Silences of one namespace or all, and the
// ClusterSilences (they mute every namespace, so they belong in either
// answer): NAMESPACE says "(cluster)" for those. Not being allowed to
// list ClusterSilences, or their CRD missing, is said on stderr and
// leaves the Silences listed.
func (c cli) silenceList(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("herald silence list", flag.ContinueOnError)
	var kf kubeFlags
	kf.register(fs)
	namespace := fs.String("namespace", "", "one namespace's Silences (default: all, as -A); ClusterSilences are listed either way")
	fs.Bool("A", false, "all namespaces (the default)")
	fs.Bool("all-namespaces", false, "all namespaces (the default)")
	pos, code, ok := parseFlags(fs, "herald silence list [--namespace NS | -A]", args, c.stdout, c.stderr)
	if !ok {
		return code
	}
	// Comments, names and matchers are anyone's who may create a
	// Silence: nothing of them reaches the terminal raw.
	c.stdout, c.stderr = termsafe.Writer{W: c.stdout}, termsafe.Writer{W: c.stderr}
	if len(pos) > 0 {
		fmt.Fprintf(c.stderr, "herald silence list: unexpected argument %q (one namespace is --namespace NS)\n", pos[0])
		return 2
	}
	clients, err := newSilenceClients(kf)
	if err != nil {
		fmt.Fprintln(c.stderr, "herald silence list:", err)
		return 1
	}
	list, err := clients.resource(*namespace, false).List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintln(c.stderr, "herald silence list:", explain(err, "list", *namespace, false))
		return 1
	}
	items := list.Items
	if cl, err := clients.resource("", true).List(ctx, metav1.ListOptions{}); err != nil {
		fmt.Fprintln(c.stderr, "herald silence list: ClusterSilences not shown:", explain(err, "list", "", true))
	} else {
		items = append(cl.Items, items...)
	}
	now := time.Now()
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tSTATE\tENDS\tMATCHERS\tMUTED\tBY\tCOMMENT")
	for i := range items {
		ns := items[i].GetNamespace()
		if ns == "" {
			ns = "(cluster)"
		}
		s, err := silence.Parse(&items[i])
		if err != nil {
			fmt.Fprintf(tw, "%s\t%s\tinvalid\t\t%v\t\t\t\n", ns, items[i].GetName(), err)
			continue
		}
		muted, _, _ := unstructured.NestedInt64(items[i].Object, "status", "mutedIncidents")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", ns, s.Name, s.State(now), s.EndsAt.UTC().Format(time.RFC3339),
			termsafe.Line(s.Matchers.String()), muted, termsafe.Line(s.CreatedBy), termsafe.Line(s.Comment))
	}
	tw.Flush()
	return 0
}

// silenceExpire ends a Silence (--namespace) or a ClusterSilence
// (--all-namespaces) now, or deletes one that has not started.
func (c cli) silenceExpire(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("herald silence expire", flag.ContinueOnError)
	var kf kubeFlags
	kf.register(fs)
	namespace := fs.String("namespace", "", "the Silence's namespace (or --all-namespaces)")
	cluster := fs.Bool("all-namespaces", false, "expire a ClusterSilence")
	fs.BoolVar(cluster, "A", false, "short for --all-namespaces")
	pos, code, ok := parseFlags(fs, "herald silence expire (--namespace NS | --all-namespaces) NAME", args, c.stdout, c.stderr)
	if !ok {
		return code
	}
	if (*namespace == "") == !*cluster || len(pos) != 1 {
		fmt.Fprintln(c.stderr, "herald silence expire: want --namespace NS (a Silence) or --all-namespaces (a ClusterSilence), and one silence name")
		return 2
	}
	name := pos[0]
	ref := "silence " + *namespace + "/" + name
	if *cluster {
		ref = "clustersilence " + name
	}
	clients, err := newSilenceClients(kf)
	if err != nil {
		fmt.Fprintln(c.stderr, "herald silence expire:", err)
		return 1
	}
	res := clients.resource(*namespace, *cluster)
	obj, err := res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && !crdMissing(err) {
			where := "in namespace " + *namespace
			if *cluster {
				where = "among the ClusterSilences"
			}
			fmt.Fprintf(c.stderr, "herald silence expire: no silence %s %s (herald silence list shows them)\n", name, where)
			return 1
		}
		fmt.Fprintln(c.stderr, "herald silence expire:", explain(err, "get", *namespace, *cluster))
		return 1
	}
	s, err := silence.Parse(obj)
	now := time.Now().UTC().Truncate(time.Second)
	if err != nil || now.Before(s.StartsAt) {
		// Not started yet (or unreadable): nothing to keep a record of.
		// One that starts this very second has started: it is kept, as
		// expired.
		if err := res.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			fmt.Fprintln(c.stderr, "herald silence expire:", explain(err, "delete", *namespace, *cluster))
			return 1
		}
		fmt.Fprintf(c.stdout, "%s had not started: deleted\n", ref)
		return 0
	}
	if s.State(now) == "expired" {
		fmt.Fprintf(c.stdout, "%s had already expired at %s\n", ref, s.EndsAt.UTC().Format(time.RFC3339))
		return 0
	}
	patch := fmt.Sprintf(`{"spec":{"endsAt":%q}}`, expiryEnd(now, s.StartsAt).UTC().Format(time.RFC3339))
	if _, err := res.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		fmt.Fprintln(c.stderr, "herald silence expire:", explain(err, "update", *namespace, *cluster))
		return 1
	}
	fmt.Fprintf(c.stdout, "%s expired: what it muted and is still firing goes out now\n", ref)
	return 0
}

// expiryEnd is when a silence that started at startsAt ends when expired
// at now: now, or for one that began this very second, a second after it
// began (the resource refuses an end that is not after its start).
func expiryEnd(now, startsAt time.Time) time.Time {
	if now.After(startsAt) {
		return now
	}
	return startsAt.Add(time.Second)
}
