package incident

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/herald-k8s/herald/internal/rules"
)

// Open incidents per namespace are capped (Options.MaxOpenPerNamespace):
// anyone who can create pods in a namespace can make a thousand problems
// there, and a thousand alerts would bury every other team's. Once a
// namespace has that many open incidents, a problem that would open one
// more joins instead the namespace's one overflow incident, "too many
// incidents in namespace X", which counts them and names a few; it is
// updated (paced) as their number changes and resolves when they are
// gone. Each held-back object is looked at again every overflowRecheck,
// and opens an incident of its own as soon as there is room.

// OverflowRule and OverflowReason name a namespace's overflow incident.
const (
	OverflowRule   = "herald-too-many-incidents"
	OverflowReason = "TooManyIncidents"
)

// overflowRecheck is how often an object whose problem was held back is
// looked at again.
const overflowRecheck = time.Minute

// unseenRecheck is how soon an incident whose known members all left,
// while restored ones are still unseen, is looked at again (members.go).
const unseenRecheck = 5 * time.Second

// namespaceCap is the stage that caps the open incidents of a namespace:
// it counts them, and says when a namespace is full.
type namespaceCap struct {
	limit  int            // 0: no cap
	openIn map[string]int // namespace → open incidents (overflow incidents not counted)
}

func newNamespaceCap(limit int) namespaceCap {
	return namespaceCap{limit: limit, openIn: map[string]int{}}
}

// full reports whether f would open an incident in a namespace that has
// its limit of open incidents. Cluster-scoped objects are not capped:
// only cluster administrators make them.
func (c *namespaceCap) full(f rules.Finding) bool {
	ns := f.Object.Namespace
	return c.limit > 0 && ns != "" && c.openIn[ns] >= c.limit
}

// count keeps the number of open incidents per namespace (the overflow
// incidents not counted) as inc opens (+1) or closes (-1).
func (c *namespaceCap) count(inc *Incident, d int) {
	ns := inc.Object.Namespace
	if inc.Rule == OverflowRule || ns == "" {
		return
	}
	if c.openIn[ns] += d; c.openIn[ns] <= 0 {
		delete(c.openIn, ns)
	}
}

// describe sets what an overflow incident's next notification says.
func (c *namespaceCap) describe(inc *Incident) {
	ns, limit := inc.Object.Name, c.limit
	more := Thousands(inc.MemberCount)
	inc.Title = fmt.Sprintf("Too many incidents in namespace %s: %s more problems held back", ns, more)
	inc.Text = fmt.Sprintf("Namespace %s has %s open incidents, the most herald opens in one namespace (incidents.maxOpenPerNamespace), "+
		"so that one namespace cannot bury every other alert. %s more problems there are held back until some resolve: %s.",
		ns, Thousands(limit), more, inc.MemberNames())
	inc.Facts = map[string]string{"limit": strconv.Itoa(limit), "heldBack": strconv.Itoa(inc.MemberCount), "objects": inc.MemberNames()}
}

// join records that object has a problem (f) its namespace has no room
// for: object joins the namespace's overflow incident, which opens in t
// if needed. It returns the overflow incident's fingerprint.
func (c *namespaceCap) join(t *Tracker, object string, f rules.Finding, now time.Time) (string, Notification, bool) {
	ns := f.Object.Namespace
	fp := Fingerprint(rules.Finding{Rule: OverflowRule, Object: rules.ObjectRef{UID: "namespace:" + ns}, Reason: OverflowReason})
	inc, ok := t.open[fp]
	if !ok {
		occ := t.nextOccurrence(fp)
		inc = &Incident{
			ID: fp + "-" + strconv.Itoa(occ), Occurrence: occ, Fingerprint: fp,
			Rule: OverflowRule, Severity: f.Severity, Reason: OverflowReason,
			// In the namespace too: routed, muted (a Silence there) and
			// labelled as the incidents it holds back would be.
			Object:  rules.ObjectRef{Kind: "Namespace", Namespace: ns, Name: ns},
			Grouped: true, Sinks: slices.Clone(f.Sinks), Channel: f.Channel, FirstSeen: now,
			Route: f.Route, Dest: f.Dest, Mentions: f.Mentions,
			NoContext: true, repeat: f.Repeat, updateEvery: f.UpdateInterval,
		}
		inc.addMember(object)
		inc.Total = inc.MemberCount
		t.setOpen(inc, true)
		t.index(object, fp)
		n, ok := t.notify(inc, Firing, now, "")
		return fp, n, ok
	}
	if !inc.ResolvingSince.IsZero() {
		inc.ResolvingSince = time.Time{}
		t.touch(inc)
	}
	for _, s := range f.Sinks {
		if !slices.Contains(inc.Sinks, s) {
			inc.Sinks = append(inc.Sinks, s)
			t.touch(inc)
		}
	}
	if severityRank[f.Severity] > severityRank[inc.Severity] {
		inc.Severity = f.Severity
		t.touch(inc)
	}
	joined := !inc.hasMember(object)
	if joined {
		inc.addMember(object)
		t.index(object, fp)
		t.touch(inc)
	}
	inc.Total = inc.MemberCount
	if inc.MemberCount != inc.NotifiedMembers {
		n, ok := t.pacer.update(inc, now, joined)
		return fp, n, ok
	}
	return fp, Notification{}, false
}

var severityRank = map[string]int{"info": 1, "warning": 2, "critical": 3}

// nameMembers says in a grouped incident's message which members it has
// now (a few names and how many more).
func (c *namespaceCap) nameMembers(inc *Incident) {
	if inc.Rule == OverflowRule {
		c.describe(inc)
		return
	}
	if inc.MemberCount == 0 {
		return
	}
	if inc.Facts == nil {
		inc.Facts = map[string]string{}
	}
	inc.Facts["pods"] = inc.MemberNames()
}
