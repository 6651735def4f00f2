package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/enrich"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/redact"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/internal/termsafe"
	"github.com/herald-k8s/herald/watcher"
)

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// cmdTest is a dry run: which rules fire for the given objects (or every
// object in a live cluster) and the exact messages. Nothing is sent.
func (c cli) cmdTest(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("herald test", flag.ContinueOnError)
	configPath := fs.String("config", "", "path of the configuration file")
	fs.StringVar(configPath, "f", "", "shorthand for --config")
	var objects stringList
	fs.Var(&objects, "object", "YAML file of objects to test (repeatable; --- separates objects)")
	live := fs.Bool("live", false, "test every object of the watched kinds in the cluster (implied by --kubeconfig or --context)")
	var kf kubeFlags
	kf.register(fs)
	routes := fs.Bool("route", false, "also print, for every finding, which route takes it, where each sink sends it, and why the other routes do not")
	send := fs.String("send", "", "send one test notification through the configured sink of this name, and report what its destination answered")
	sendWithin := fs.Duration("timeout", 15*time.Second, "with --send: how long failures the sink would retry (NATS still connecting, a 503) are tried again")
	if code, ok := parseNoArgs(fs, "herald test -f FILE (--object OBJECTS.yaml ... | --live [--kubeconfig FILE] [--context NAME]) [--route] | herald test -f FILE --send SINK", args, c.stdout, c.stderr); !ok {
		return code
	}
	*live = *live || kf.kubeconfig != "" || kf.context != ""
	// Titles, texts and Event messages come from the cluster: nothing of
	// them reaches the terminal raw.
	c.stdout, c.stderr = termsafe.Writer{W: c.stdout}, termsafe.Writer{W: c.stderr}
	switch {
	case *send != "" && (len(objects) > 0 || *live):
		fmt.Fprintln(c.stderr, "herald test: --send tests a sink; --object and --live test rules: give one or the other")
		return 2
	case *send == "" && len(objects) == 0 && !*live:
		fmt.Fprintln(c.stderr, "herald test: give --object FILE (repeatable), --live (the cluster kubectl would use, or --kubeconfig FILE / --context NAME), or --send SINK")
		return 2
	}
	// Testing rules sends nothing: the sinks' secrets are listed, not
	// read (a laptop has none of them).
	load := config.LoadOffline
	if *send != "" {
		// Only the tested sink's secrets are read: a test of Slack
		// needs no PagerDuty key.
		load = func(path string) (*config.Config, error) { return config.LoadForSink(path, *send) }
	}
	cfg, set, err := compileConfig(*configPath, load)
	if err != nil {
		fmt.Fprintln(c.stderr, err)
		return 1
	}
	if *send != "" {
		return c.testSend(ctx, cfg, *send, *sendWithin)
	}
	now := time.Now()
	var objs []runtime.Object
	for _, path := range objects {
		found, err := readObjects(path)
		if err != nil {
			fmt.Fprintln(c.stderr, err)
			return 1
		}
		objs = append(objs, found...)
	}
	var rc *rest.Config
	var changed *testChanges
	if *live {
		if rc, _, err = kf.load("herald/" + version + " test"); err != nil {
			fmt.Fprintln(c.stderr, "herald test:", err)
			return 1
		}
		found, tc, err := listLive(ctx, rc, cfg, set, *routes)
		changed = tc
		if err != nil {
			fmt.Fprintln(c.stderr, "herald test:", err)
			return 1
		}
		objs = append(objs, found...)
	}
	// Live, the crash context each firing would carry, as herald would
	// gather it (herald's own budget aside).
	var gather func(rules.Finding) *incident.Context
	if *live && *cfg.Context.Enabled {
		if gather, err = contextGatherer(ctx, cfg, rc); err != nil {
			fmt.Fprintln(c.stderr, "herald test:", err)
			return 1
		}
	}
	var book *routeBook
	if *routes {
		book = newRouteBook(cfg, objs)
	}
	firing, excluded, failed := 0, 0, 0
	for _, obj := range objs {
		if book != nil && !watchedKind(set, obj) {
			continue // a Namespace or workload read for routing only
		}
		f, x, e := report(c.stdout, set, obj, now, gather, changed, book)
		firing, excluded, failed = firing+f, excluded+x, failed+e
	}
	fmt.Fprintf(c.stdout, "%d objects tested, %d findings", len(objs), firing)
	if excluded > 0 {
		fmt.Fprintf(c.stdout, ", %d excluded", excluded)
	}
	fmt.Fprintln(c.stdout)
	if failed > 0 {
		// A rule that cannot be evaluated would fail in herald run too:
		// a CI pipeline running herald test must see it.
		fmt.Fprintf(c.stderr, "herald test: %d rule evaluations failed (the ERROR lines above; herald run would log them, and send a failed template's notification in the default wording)\n", failed)
		return 1
	}
	return 0
}

// report prints what the rules find on one object, and what their exclude
// blocks drop (and which exclusion did), and returns both counts and the
// number of rules that failed on it; with
// gather, the crash context of what fires too, and with changed, what
// changed before it.
func report(out io.Writer, set *rules.Set, obj runtime.Object, now time.Time, gather func(rules.Finding) *incident.Context, changed *testChanges, book *routeBook) (findings, excluded, failed int) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	kind, err := rules.KindID(gvk.Kind, gvk.GroupVersion().String())
	if err != nil {
		fmt.Fprintf(out, "%s: %v\n", gvk.Kind, err)
		return 0, 0, 0
	}
	m := obj.(interface {
		GetNamespace() string
		GetName() string
	})
	name := m.GetName()
	if ns := m.GetNamespace(); ns != "" {
		name = ns + "/" + name
	}
	ev := set.EvaluateWithExclusions(kind, obj, now, nil)
	for _, e := range ev.Errors {
		fmt.Fprintf(out, "%s %s: ERROR %v\n", gvk.Kind, name, e)
	}
	for _, f := range ev.Findings {
		state := "FIRES"
		switch {
		case f.Sustaining:
			state = "KEEPS OPEN"
		case f.For > 0 && (f.Since.IsZero() || now.Sub(f.Since) < f.For):
			state = fmt.Sprintf("FIRES AFTER for: %s", f.For)
		}
		fmt.Fprintf(out, "%s %s: rule %s %s [%s → %s]\n  title: %s\n  text:  %s\n", gvk.Kind, name, f.Rule, state, f.Severity, strings.Join(f.Sinks, ","), termsafe.Line(f.Title), f.Text)
		if book != nil {
			if m, err := meta.Accessor(obj); err == nil {
				book.print(out, m, f)
			}
		}
		if gather != nil && !f.Sustaining && !f.NoContext {
			printContext(out, gather(f))
		}
		if !f.Sustaining {
			printChanges(out, changed.section(f, now))
		}
	}
	for _, x := range ev.Excluded {
		about := ""
		if x.Finding.Container != "" {
			about = " container " + x.Finding.Container
		}
		fmt.Fprintf(out, "%s %s: rule %s EXCLUDED (%s%s): %s\n", gvk.Kind, name, x.Finding.Rule, x.Finding.Reason, about, x)
	}
	if len(ev.Findings) == 0 && len(ev.Errors) == 0 && len(ev.Excluded) == 0 {
		fmt.Fprintf(out, "%s %s: no rule fires\n", gvk.Kind, name)
	}
	return len(ev.Findings), len(ev.Excluded), len(ev.Errors)
}

// readObjects decodes every YAML document of path: built-in kinds into
// their types (as the typed informers hold them), others as unstructured.
func readObjects(path string) ([]runtime.Object, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []runtime.Object
	for i := 1; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := kube.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			u := &unstructured.Unstructured{}
			jsonDoc, convErr := utilyaml.ToJSON(doc)
			if convErr != nil || u.UnmarshalJSON(jsonDoc) != nil {
				return nil, fmt.Errorf("%s: document %d: %w", path, i, err)
			}
			obj = u
		}
		out = append(out, obj)
	}
}

// listLive syncs informers for the rules' kinds and returns every cached
// object, and the change record those informers fed (nil when
// context.changes is off).
func listLive(ctx context.Context, cfg *rest.Config, conf *config.Config, set *rules.Set, withNamespaces bool) ([]runtime.Object, *testChanges, error) {
	clients, _, err := newClients(cfg)
	if err != nil {
		return nil, nil, err
	}
	w := watcher.New(clients, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	changed, err := newTestChanges(ctx, conf, cfg, w)
	if err != nil {
		return nil, nil, err
	}
	kinds := set.Kinds()
	if withNamespaces && !slices.Contains(kinds, "Namespace") {
		kinds = append(slices.Clone(kinds), "Namespace") // their labels and teams, for routing
	}
	for _, kind := range kinds {
		if _, err := w.Informer(kind); err != nil {
			return nil, nil, err
		}
	}
	w.Start(ctx)
	defer w.Shutdown()
	if err := w.WaitForCacheSync(ctx); err != nil {
		return nil, nil, err
	}
	var out []runtime.Object
	for _, kind := range kinds {
		objs, err := w.List(kind)
		if err != nil {
			return nil, nil, err
		}
		for _, o := range objs {
			if gvk, ok := rules.ParseKindID(kind); ok {
				o = o.DeepCopyObject()
				o.GetObjectKind().SetGroupVersionKind(gvk) // typed informers leave it empty
			}
			out = append(out, o)
		}
	}
	if changed != nil {
		changed.learn(out)
	}
	return out, changed, nil
}

// contextGatherer gathers a finding's crash context from the cluster rc
// points at, with the configuration's settings.
func contextGatherer(ctx context.Context, cfg *config.Config, rc *rest.Config) (func(rules.Finding) *incident.Context, error) {
	client, err := kube.New(rc)
	if err != nil {
		return nil, err
	}
	redactor, err := redact.New(cfg.Context.Redact)
	if err != nil {
		return nil, err
	}
	e := enrich.New(enrich.Options{Source: enrich.KubeSource{Client: client}, Logs: *cfg.Context.Logs.Enabled,
		Lines: cfg.Context.Logs.Lines, MaxBytes: cfg.Context.Logs.MaxBytes, Events: cfg.Context.Events.Max, Wait: cfg.Context.Wait,
		Redactor: redactor, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	return func(f rules.Finding) *incident.Context {
		key := watcher.Key{Kind: "Pod", Namespace: f.Object.Namespace, Name: f.Object.Name}
		inc := incident.Incident{Reason: f.Reason, Container: f.Container, Facts: f.Facts, Object: f.Object, NoLogs: f.NoLogs}
		if f.Object.Kind == "Pod" {
			inc.Members = []string{key.String()}
		}
		return e.Gather(ctx, incident.Notification{Transition: incident.Firing, Incident: inc})
	}, nil
}

func printContext(out io.Writer, c *incident.Context) {
	if c == nil {
		return
	}
	if c.Hint != "" {
		fmt.Fprintf(out, "  hint:  %s\n", c.Hint)
	}
	if c.Logs != nil {
		fmt.Fprintf(out, "  logs (%s, previous: %v):\n", c.Logs.Container, c.Logs.Previous)
		for _, l := range c.Logs.Lines {
			fmt.Fprintf(out, "    | %s\n", l)
		}
	}
	for _, ev := range c.Events {
		fmt.Fprintf(out, "  event: %s %s ×%d: %s\n", ev.Type, ev.Reason, ev.Count, termsafe.Line(ev.Message))
	}
	if c.Unavailable != "" {
		fmt.Fprintf(out, "  context incomplete: %s\n", c.Unavailable)
	}
}

// watchedKind reports whether some rule watches obj's kind.
func watchedKind(set *rules.Set, obj runtime.Object) bool {
	gvk := obj.GetObjectKind().GroupVersionKind()
	kind, err := rules.KindID(gvk.Kind, gvk.GroupVersion().String())
	return err != nil || slices.Contains(set.Kinds(), kind) // an unknown kind is reported as before
}
