package incident

import (
	"slices"
	"strings"
	"time"
)

// book is what the tracker owns: the incidents and their identity. It
// keeps the open incidents by fingerprint, the resolved ones it retains,
// which objects are members of what, and the occurrence numbers that make
// an incident's ID. Whether and when anything is said is for the stages
// (the package doc gives their order); the book only records. Every method expects
// the tracker's lock held.
type book struct {
	open     map[string]*Incident // fingerprint → open incident
	resolved map[string]*Incident // ID → resolved incident
	// lastResolved is the ID of each fingerprint's latest resolved
	// incident: older ones whose deliveries are done are dropped, so the
	// ledger holds one resolved incident per problem, not one per
	// occurrence (a flapping pod would otherwise grow it all day).
	lastResolved map[string]string
	byObject     map[string]map[string]bool // object key → fingerprints it is (or was, while resolving) a member of
	// occurrences is the highest occurrence number of each fingerprint
	// the tracker knows (open or retained).
	occurrences map[string]int
	// version counts changes worth persisting.
	version uint64
}

func newBook() book {
	return book{open: map[string]*Incident{}, resolved: map[string]*Incident{}, lastResolved: map[string]string{},
		byObject: map[string]map[string]bool{}, occurrences: map[string]int{}}
}

// nextOccurrence numbers a new occurrence of fp.
func (b *book) nextOccurrence(fp string) int {
	b.occurrences[fp]++
	return b.occurrences[fp]
}

// retire keeps a resolved incident and drops the fingerprint's previous
// resolved one if every sink has it: its occurrence number lives on in
// the newer incident, which is all later occurrences need.
func (b *book) retire(inc *Incident) {
	prev, ok := b.resolved[b.lastResolved[inc.Fingerprint]]
	switch {
	case !ok || prev == inc:
	case prev.Occurrence < inc.Occurrence:
		if len(prev.Pending) == 0 {
			delete(b.resolved, prev.ID)
		}
	default: // inc is the older one (a ledger restored in any order)
		if len(inc.Pending) > 0 {
			b.resolved[inc.ID] = inc
		}
		return
	}
	b.resolved[inc.ID] = inc
	b.lastResolved[inc.Fingerprint] = inc.ID
}

// lastOf is the latest resolved incident of fp (nil: none retained).
func (b *book) lastOf(fp string) *Incident { return b.resolved[b.lastResolved[fp]] }

// forgetResolved drops the resolved incidents past retention whose
// deliveries are done (retention 0: none).
func (b *book) forgetResolved(now time.Time, retention time.Duration) {
	for id, inc := range b.resolved {
		if retention > 0 && now.Sub(inc.ResolvedAt) > retention && len(inc.Pending) == 0 {
			delete(b.resolved, id)
			if b.lastResolved[inc.Fingerprint] == id {
				delete(b.lastResolved, inc.Fingerprint)
			}
		}
	}
}

// touch records a change of inc worth persisting.
func (b *book) touch(inc *Incident) {
	b.version++
	inc.rev = b.version
}

func (b *book) index(object, fp string) {
	if b.byObject[object] == nil {
		b.byObject[object] = map[string]bool{}
	}
	b.byObject[object][fp] = true
}

func (b *book) unindex(object, fp string) {
	delete(b.byObject[object], fp)
	if len(b.byObject[object]) == 0 {
		delete(b.byObject, object)
	}
}

// byID finds an open or retained incident.
func (b *book) byID(id string) *Incident {
	if inc := b.resolved[id]; inc != nil {
		return inc
	}
	fp, _, _ := strings.Cut(id, "-") // IDs are <fingerprint>-<occurrence>
	if inc := b.open[fp]; inc != nil && inc.ID == id {
		return inc
	}
	return nil
}

// all lists open and retained resolved incidents.
func (b *book) all() []*Incident {
	out := make([]*Incident, 0, len(b.open)+len(b.resolved))
	for _, inc := range b.open {
		out = append(out, inc)
	}
	for _, inc := range b.resolved {
		out = append(out, inc)
	}
	return out
}

// sortedOpen lists the open fingerprints in order.
func (b *book) sortedOpen() []string {
	out := make([]string, 0, len(b.open))
	for fp := range b.open {
		out = append(out, fp)
	}
	slices.Sort(out)
	return out
}

// countOpen counts the open incidents by what by says of each, those
// for which keep says true (nil: all).
func (b *book) countOpen(by func(*Incident) string, keep func(*Incident) bool) map[string]int {
	out := map[string]int{}
	for _, inc := range b.open {
		if keep == nil || keep(inc) {
			out[by(inc)]++
		}
	}
	return out
}

// shared is the ledger's copy of inc, made again only when inc changed
// since the last: most incidents did not change since the last flush, and
// copying every retained incident each second was the largest part of
// one.
func (inc *Incident) shared() *Incident {
	if inc.snap == nil || inc.snap.rev != inc.rev {
		s := snapshot(inc)
		s.Pending = slices.Clone(inc.Pending)
		for i := range s.Pending { // Delivered edits these in place
			s.Pending[i].Sinks = slices.Clone(s.Pending[i].Sinks)
		}
		inc.snap = &s
	}
	return inc.snap
}
