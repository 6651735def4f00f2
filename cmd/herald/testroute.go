package main

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/route"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// herald test --route: for every finding, which route takes it, where
// each sink sends it, and, route by route, why the others did not. The
// namespaces and workloads it reads are those among the objects tested
// (--object files, or the live cluster's).

// routeBook is what routing reads besides the object: namespaces and
// workloads by key.
type routeBook struct {
	table    *route.Table
	cfg      *config.Config
	byKey    map[watcher.Key]metav1.Object
	anyRoute bool
}

func newRouteBook(cfg *config.Config, objs []runtime.Object) *routeBook {
	b := &routeBook{table: routesOf(cfg), cfg: cfg, byKey: map[watcher.Key]metav1.Object{}, anyRoute: len(cfg.Routes) > 0}
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			continue
		}
		kind := o.GetObjectKind().GroupVersionKind().Kind
		b.byKey[watcher.Key{Kind: kind, Namespace: m.GetNamespace(), Name: m.GetName()}] = m
	}
	return b
}

// team is the team that owns obj as herald reads it (watcher.OwningTeam),
// from the objects tested.
func (b *routeBook) team(obj metav1.Object) (team, from string) {
	var owner, ns metav1.Object
	if kind, name := watcher.Workload(obj); kind != "Pod" || name != obj.GetName() {
		owner = b.byKey[watcher.Key{Kind: kind, Namespace: obj.GetNamespace(), Name: name}]
	}
	if obj.GetNamespace() != "" {
		ns = b.byKey[watcher.Key{Kind: "Namespace", Name: obj.GetNamespace()}]
	}
	return watcher.OwningTeam(obj, owner, ns)
}

// print writes where f goes and why.
func (b *routeBook) print(out io.Writer, obj metav1.Object, f rules.Finding) {
	s := route.Subject{Namespace: obj.GetNamespace(), Labels: obj.GetLabels()}.WithFinding(f)
	var team, from string
	if ns, ok := b.byKey[watcher.Key{Kind: "Namespace", Name: s.Namespace}]; ok {
		s.NamespaceLabels = route.KnownLabels(ns.GetLabels())
		if hasSlack(b.cfg) {
			s.AnnotatedChannel = ns.GetAnnotations()[route.AnnotationChannel]
		}
	} else if s.Namespace != "" {
		fmt.Fprintf(out, "  (namespace %s is not among the objects tested: its labels and annotations are unknown)\n", s.Namespace)
	}
	if team, from = b.team(obj); team != "" {
		s.Team = team
		fmt.Fprintf(out, "  team:  %q (from %s)\n", team, from) // quoted: an annotation may hold escapes
	}
	d := b.table.Decide(s)
	via := "no route matched: the rule's sinks"
	if len(d.Routes) > 0 {
		via = "route " + strings.Join(d.Routes, " + ")
	} else if !b.anyRoute {
		via = "the rule's sinks (no routes configured)"
	}
	fmt.Fprintf(out, "  goes:  %s\n", via)
	for _, sink := range d.Sinks {
		where := "its default"
		switch {
		case d.Dest[sink] != "":
			where = d.Dest[sink]
		case d.Channel != "" && b.sinkType(sink) == "slack":
			where = d.Channel
		}
		fmt.Fprintf(out, "    → %s: %s\n", sink, where)
	}
	if len(d.Mentions) > 0 {
		fmt.Fprintf(out, "    mentions: %s\n", strings.Join(d.Mentions, ", "))
	}
	if d.Refused != "" {
		fmt.Fprintf(out, "    not followed: %s\n", d.Refused)
	}
	for _, line := range b.table.Explain(s) {
		fmt.Fprintf(out, "    %s\n", line)
	}
}

func (b *routeBook) sinkType(name string) string {
	for _, s := range b.cfg.Sinks {
		if s.Name == name {
			return s.Type()
		}
	}
	return ""
}
