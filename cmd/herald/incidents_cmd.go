package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/termsafe"
)

// openIncident is one line of herald incidents: what an operator asks
// first about an open incident.
type openIncident struct {
	ID             string    `json:"id"`
	Rule           string    `json:"rule"`
	Severity       string    `json:"severity"`
	Reason         string    `json:"reason"`
	Object         string    `json:"object"` // Kind/namespace/name (the workload, when grouped)
	Container      string    `json:"container,omitempty"`
	Pods           string    `json:"pods,omitempty"` // grouped: affected/total
	Since          time.Time `json:"since"`
	LastNotified   time.Time `json:"lastNotified"`
	LastTransition string    `json:"lastTransition,omitempty"`
	Seq            int       `json:"seq"`
	// PendingSinks have not accepted some notification yet.
	PendingSinks []string `json:"pendingSinks,omitempty"`
	// HeldUntil: an update is held by pacing until then.
	HeldUntil *time.Time `json:"heldUntil,omitempty"`
	Flapping  bool       `json:"flapping,omitempty"`
	// Resolving: the problem is gone; it resolves after the hold-down.
	Resolving bool `json:"resolving,omitempty"`
	// MutedBy: a silence, annotation, window or inhibition holds its
	// notifications back (until MutedUntil, when known).
	MutedBy    string     `json:"mutedBy,omitempty"`
	MutedUntil *time.Time `json:"mutedUntil,omitempty"`
	// Acknowledged: who took it on (a Slack button), and when.
	Acknowledged *incident.Ack `json:"acknowledged,omitempty"`
}

// cmdIncidents prints the open incidents of a running herald's ledger. It
// only reads (lists the ledger ConfigMaps), so it never disturbs herald.
func (c cli) cmdIncidents(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("herald incidents", flag.ContinueOnError)
	var kf kubeFlags
	kf.register(fs)
	namespace := fs.String("namespace", "", "herald's namespace, where its ledger ConfigMaps are (default: $POD_NAMESPACE, else the one namespace holding the ledger)")
	ledger := fs.String("ledger-name", config.DefaultLedgerName, "the ledger's name (incidents.ledgerName)")
	output := fs.String("o", "table", "output: table or json")
	if _, code, ok := parseFlags(fs, "herald incidents [--namespace NS] [--ledger-name NAME] [-o table|json] [--kubeconfig FILE] [--context NAME]", args, c.stdout, c.stderr); !ok {
		return code
	}
	// Titles and names come from the cluster: nothing of them reaches
	// the terminal raw.
	c.stdout, c.stderr = termsafe.Writer{W: c.stdout}, termsafe.Writer{W: c.stderr}
	fail := func(err error) int {
		fmt.Fprintln(c.stderr, "herald incidents:", err)
		return 1
	}
	if *output != "table" && *output != "json" {
		fmt.Fprintf(c.stderr, "herald incidents: -o %s: want table or json\n", *output)
		return 2
	}
	rc, where, err := kf.load("herald/" + version + " incidents")
	if err != nil {
		return fail(err)
	}
	client, err := kube.New(rc)
	if err != nil {
		return fail(err)
	}
	if *namespace == "" {
		if *namespace, err = ledgerNamespace(ctx, client, *ledger, where); err != nil {
			return fail(err)
		}
	}
	store := incident.NewConfigMapStore(client, *namespace, *ledger)
	// No ledger is not "no incidents": it is the wrong namespace, the
	// wrong cluster or no herald, and saying "0 open incidents" then
	// would reassure someone whose cluster is on fire.
	exists, err := store.Exists(ctx)
	if err != nil {
		return fail(fmt.Errorf("%w (%s; herald's namespace is --namespace; reading the ledger needs get and list on ConfigMaps there)", err, where))
	}
	if !exists {
		return fail(fmt.Errorf("no herald ledger %q in namespace %q (%s): is herald installed there? use --namespace (herald's namespace) or --ledger-name", *ledger, *namespace, where))
	}
	warn := func(msg string, args ...any) {
		fmt.Fprintln(c.stderr, append([]any{"herald incidents: warning:", msg}, args...)...)
	}
	incs, err := store.Load(ctx, warn)
	if err != nil {
		return fail(fmt.Errorf("%w (%s; herald's namespace is --namespace; reading the ledger needs get and list on ConfigMaps there)", err, where))
	}
	open := openIncidents(incs)
	if *output == "json" {
		b, err := json.MarshalIndent(open, "", "  ")
		if err != nil {
			return fail(err)
		}
		// Inert and still valid JSON (the Writer's escapes would not be).
		c.stdout.(termsafe.Writer).W.Write(append(termsafe.JSON(b), '\n'))
		return 0
	}
	if len(open) == 0 {
		// Said in words, with where: an empty table reads like a failure.
		fmt.Fprintf(c.stdout, "no open incidents in herald's ledger %q in namespace %q (%s)\n", *ledger, *namespace, where)
		return 0
	}
	printIncidents(c.stdout, open, time.Now())
	return 0
}

// openIncidents picks the open incidents of a ledger, oldest first.
func openIncidents(incs []incident.Incident) []openIncident {
	out := []openIncident{}
	for _, inc := range incs {
		if !inc.ResolvedAt.IsZero() {
			continue
		}
		o := openIncident{ID: inc.ID, Rule: inc.Rule, Severity: inc.Severity, Reason: inc.Reason,
			Object:    strings.Trim(inc.Object.Kind+"/"+inc.Object.Namespace+"/"+inc.Object.Name, "/"),
			Container: inc.Container, Since: inc.FirstSeen, LastNotified: inc.LastNotified,
			LastTransition: string(inc.LastTransition), Seq: inc.Seq, Flapping: inc.Flapping, Resolving: !inc.ResolvingSince.IsZero()}
		if inc.Grouped {
			o.Pods = fmt.Sprintf("%d/%d", max(inc.MemberCount, len(inc.Members)), inc.Total)
		}
		if !inc.HeldUntil.IsZero() {
			o.HeldUntil = &inc.HeldUntil
		}
		o.MutedBy, o.Acknowledged = inc.MutedBy, inc.Ack
		if !inc.MutedUntil.IsZero() {
			o.MutedUntil = &inc.MutedUntil
		}
		for _, p := range inc.Pending {
			for _, s := range p.Sinks {
				if !slices.Contains(o.PendingSinks, s) {
					o.PendingSinks = append(o.PendingSinks, s)
				}
			}
		}
		slices.Sort(o.PendingSinks)
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b openIncident) int { return cmp.Or(a.Since.Compare(b.Since), strings.Compare(a.ID, b.ID)) })
	return out
}

func printIncidents(w io.Writer, open []openIncident, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSEVERITY\tOBJECT\tCONTAINER\tPODS\tSINCE\tLAST NOTIFIED\tPENDING\tSTATE")
	age := func(t time.Time) string { return now.Sub(t).Round(time.Second).String() }
	for _, o := range open {
		last := "-"
		if !o.LastNotified.IsZero() {
			last = cmp.Or(o.LastTransition, "?") + " (#" + fmt.Sprint(o.Seq) + ") " + age(o.LastNotified) + " ago"
		}
		var state []string
		if o.HeldUntil != nil {
			state = append(state, "update held "+o.HeldUntil.Sub(now).Round(time.Second).String())
		}
		if o.Flapping {
			state = append(state, "flapping")
		}
		if o.Resolving {
			state = append(state, "resolving")
		}
		if o.MutedBy != "" {
			muted := "muted: " + o.MutedBy
			if o.MutedUntil != nil {
				muted += " for " + o.MutedUntil.Sub(now).Round(time.Second).String()
			}
			state = append(state, muted)
		}
		if a := o.Acknowledged; a != nil {
			state = append(state, "acknowledged by "+cmp.Or(a.Name, a.By)+" "+age(a.At)+" ago")
		}
		// Each cell on its line: an edited ledger must not forge a row.
		line := termsafe.Line
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", line(o.Rule), line(o.Severity), line(o.Object), line(cmp.Or(o.Container, "-")), line(cmp.Or(o.Pods, "-")),
			age(o.Since), last, line(cmp.Or(strings.Join(o.PendingSinks, ","), "-")), line(cmp.Or(strings.Join(state, ", "), "firing")))
	}
	tw.Flush()
	fmt.Fprintf(w, "%d open %s\n", len(open), map[bool]string{true: "incident", false: "incidents"}[len(open) == 1])
}
