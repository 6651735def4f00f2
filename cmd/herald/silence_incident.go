package main

import (
	"context"
	"flag"
	"fmt"
	"regexp"
	"strings"

	"github.com/herald-k8s/herald/config"
	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/kube"
	"github.com/herald-k8s/herald/internal/silence"
)

// incidentRef is herald silence create --incident: the incident ID a
// message's footer shows, looked up in herald's ledger, so that silencing
// what just paged you needs no matcher written by hand (and cannot mute
// more than that by a typo).
type incidentRef struct {
	id, heraldNamespace, ledger string
}

func (r *incidentRef) register(fs *flag.FlagSet) {
	fs.StringVar(&r.id, "incident", "", "the incident ID a notification shows (its footer); silences that incident's object or workload for its rule")
	fs.StringVar(&r.heraldNamespace, "herald-namespace", "", "with --incident: herald's namespace, where its ledger is (default: $POD_NAMESPACE, else the one namespace holding the ledger)")
	fs.StringVar(&r.ledger, "ledger-name", config.DefaultLedgerName, "with --incident: the ledger's name (incidents.ledgerName)")
}

// notificationSeq is the "-<seq>" a notification's ID adds to its
// incident's ID (incident.Notification.ID): the footer shows that one.
var notificationSeq = regexp.MustCompile(`-[0-9]+$`)

// find reads the ledger and returns the incident r.id names: an
// incident's ID, or a notification's (the incident's and its number).
// where names the cluster for messages.
func (r incidentRef) find(ctx context.Context, client *kube.Client, where string) (incident.Incident, error) {
	ns, err := r.heraldNamespace, error(nil)
	if ns == "" {
		if ns, err = ledgerNamespace(ctx, client, r.ledger, where); err != nil {
			return incident.Incident{}, fmt.Errorf("--incident: %w (herald's namespace is --herald-namespace)", err)
		}
	}
	store := incident.NewConfigMapStore(client, ns, r.ledger)
	exists, err := store.Exists(ctx)
	if err == nil && !exists {
		err = fmt.Errorf("no herald ledger %q in namespace %q (%s): is herald installed there? use --herald-namespace or --ledger-name", r.ledger, ns, where)
	}
	if err != nil {
		return incident.Incident{}, fmt.Errorf("--incident: %w", err)
	}
	incs, err := store.Load(ctx, func(string, ...any) {})
	if err != nil {
		return incident.Incident{}, fmt.Errorf("--incident: %w", err)
	}
	id := strings.TrimSpace(r.id)
	for _, want := range []string{id, notificationSeq.ReplaceAllString(id, "")} {
		for _, inc := range incs {
			if inc.ID == want {
				return inc, nil
			}
		}
	}
	return incident.Incident{}, fmt.Errorf("no incident %q in herald's ledger %q in namespace %q (%s): copy the ID from the notification's footer, or see herald incidents -o json", id, r.ledger, ns, where)
}

// silenceFor returns the matchers that mute exactly inc's object (or its
// workload, when its rule groups by workload) for inc's rule, and sets
// where the silence goes: the incident's namespace, or a ClusterSilence
// for an incident about a cluster-scoped object (a Node). A --namespace
// or --all-namespaces that says otherwise is refused, not corrected: the
// user meant something else.
func silenceFor(inc incident.Incident, namespace *string, cluster *bool) (silence.Matchers, error) {
	obj := strings.Trim(inc.Object.Kind+"/"+inc.Object.Namespace+"/"+inc.Object.Name, "/")
	m, err := silence.ForIncident(inc)
	if err != nil {
		return m, err
	}
	switch ns := inc.Object.Namespace; {
	case ns == "" && !*cluster:
		return m, fmt.Errorf("incident %s is about %s, which has no namespace: silencing it takes a ClusterSilence, add --all-namespaces", inc.ID, obj)
	case ns == "":
	case *cluster:
		return m, fmt.Errorf("incident %s is in namespace %q: a Silence there mutes it; leave out --all-namespaces", inc.ID, ns)
	case *namespace != "" && *namespace != ns:
		return m, fmt.Errorf("incident %s is in namespace %q, not %q: a Silence mutes only its own namespace; give --namespace %s or leave it out", inc.ID, ns, *namespace, ns)
	default:
		*namespace = ns
	}
	return m, nil
}
