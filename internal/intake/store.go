package intake

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/herald-k8s/herald/internal/incident"
	"github.com/herald-k8s/herald/internal/rules"
	"github.com/herald-k8s/herald/watcher"
)

// Store holds the alerts that fire now, by the key whose reconcile they
// join: to the reconcile loop they are findings like the rules', read
// level-triggered with the object's own. An alert leaves when its sender
// says it resolved; its incident then resolves like any other.
//
// The store is the leader's, in memory; the ledger keeps what it
// decided. A new leader seeds it from the open incidents the ledger
// holds (Seed), so an alert that fired before a failover is still
// firing after it, and resolves when Alertmanager says so.
type Store struct {
	mu    sync.Mutex
	byFP  map[string]*entry
	byKey map[watcher.Key]map[string]*entry
}

// entry is one firing alert.
type entry struct {
	key   watcher.Key
	alert rules.Alert
	// agree is the reason of herald's own check that sees the same
	// problem ("" when none does); join how the two met.
	agree string
	join  joining
}

// joining is how an alert and herald's own check of the same problem
// make one incident: whichever was seen first speaks for both, for as
// long as the alert fires.
type joining int

const (
	undecided  joining = iota
	joined             // herald's own finding speaks; the alert is said to agree
	standalone         // the alert speaks; herald's finding is said to agree
)

// MaxFiring bounds the alerts the store holds: a sender can post any
// number, and each is kept until it resolves.
const MaxFiring = 5000

// errFull is put's answer to a new alert when MaxFiring fire already.
var errFull = errors.New("full")

// NewStore makes an empty store.
func NewStore() *Store {
	return &Store{byFP: map[string]*entry{}, byKey: map[watcher.Key]map[string]*entry{}}
}

// put records a firing alert under key. It reports false when the same
// alert was already there unchanged (a repeat or a retry), and the
// key the alert was under before if that was another.
func (s *Store) put(key watcher.Key, a rules.Alert, agree string) (changed bool, moved *watcher.Key, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byFP[a.Fingerprint]
	if !ok && len(s.byFP) >= MaxFiring {
		return false, nil, errFull
	}
	if ok {
		if e.key == key && e.agree == agree && reflect.DeepEqual(e.alert, a) {
			return false, nil, nil
		}
		if e.key != key {
			old := e.key
			s.remove(e)
			moved = &old
		} else {
			e.alert, e.agree = a, agree
			return true, nil, nil
		}
	}
	e = &entry{key: key, alert: a, agree: agree}
	s.byFP[a.Fingerprint] = e
	if s.byKey[key] == nil {
		s.byKey[key] = map[string]*entry{}
	}
	s.byKey[key][a.Fingerprint] = e
	return true, moved, nil
}

// resolve removes the alert of fingerprint fp, returning the key it was
// under; ok is false when it was not firing here.
func (s *Store) resolve(fp string) (key watcher.Key, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byFP[fp]
	if !ok {
		return watcher.Key{}, false
	}
	s.remove(e)
	return e.key, true
}

func (s *Store) remove(e *entry) {
	delete(s.byFP, e.alert.Fingerprint)
	delete(s.byKey[e.key], e.alert.Fingerprint)
	if len(s.byKey[e.key]) == 0 {
		delete(s.byKey, e.key)
	}
}

// Firing is how many alerts fire now.
func (s *Store) Firing() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byFP)
}

// Detached says whether key names no cluster object: only alerts make
// its findings.
func (s *Store) Detached(key watcher.Key) bool { return key.Kind == DetachedKind }

// Join returns the findings of key: own (the rules') with the alerts
// firing on it. Where an alert and one of own see the same problem
// (the alert's agreeing reason, on the same container), they make one
// finding: the one that spoke first speaks, and says the other agrees.
// open says whether an incident of that fingerprint is open (herald's
// own check spoke already); it is asked once per alert, when the two
// first meet.
func (s *Store) Join(key watcher.Key, own []rules.Finding, set *rules.Set, open func(fingerprint string) bool) []rules.Finding {
	s.mu.Lock()
	defer s.mu.Unlock()
	entries := s.byKey[key]
	if len(entries) == 0 {
		return own
	}
	out := own
	for _, fp := range slices.Sorted(maps.Keys(entries)) {
		e := entries[fp]
		a := e.alert
		match := -1
		if e.agree != "" {
			match = slices.IndexFunc(out, func(f rules.Finding) bool {
				return f.Rule != rules.AlertRule && f.Reason == e.agree && (a.Container == "" || f.Container == "" || f.Container == a.Container)
			})
		}
		if e.join == undecided && e.agree != "" {
			// Herald's check, if it has not spoken yet (its rule's for:
			// still waits), never will: Prometheus waited already.
			e.join = standalone
			if match >= 0 && open(incident.Fingerprint(out[match])) {
				e.join = joined
			}
		}
		if e.join == joined {
			if match >= 0 {
				f := &out[match]
				f.Facts = maps.Clone(f.Facts)
				if f.Facts == nil {
					f.Facts = map[string]string{}
				}
				f.Facts["agrees"] = "Prometheus (" + a.Name + ")"
			}
			// Herald's own check speaks for both while the alert fires,
			// also when it no longer sees the problem: Prometheus's
			// rules look back minutes, and would only repeat what herald
			// already said resolved.
			continue
		}
		if match >= 0 {
			// herald sees the problem on the object itself: the alert's
			// incident gets the crash context herald's own would have
			// had, and never less than its severity.
			own := out[match]
			a.Problem, a.Agrees, a.Observed = e.agree, own.Reason, own.Facts
			a.Severity = rules.MoreSevere(a.Severity, own.Severity)
			out = slices.Delete(slices.Clone(out), match, match+1)
		}
		out = append(out, set.AlertFinding(a))
	}
	return out
}

// Seed fills the store, on a new leader, with the alerts whose
// incidents the ledger holds open: they fire until Alertmanager says
// they resolved. An alert that joined herald's own incident is not
// among them: Alertmanager's next notification of it joins it again.
func (s *Store) Seed(incs []incident.Incident, agreeFor func(alertname string) string) int {
	n := 0
	for _, inc := range incs {
		if inc.Rule != rules.AlertRule || !inc.ResolvedAt.IsZero() || len(inc.Members) == 0 {
			continue
		}
		key, ok := watcher.ParseKey(inc.Members[0])
		fp := inc.Facts["alertFingerprint"]
		if !ok || !fingerprintRE.MatchString(fp) {
			continue
		}
		a := rules.Alert{
			Name: inc.Reason, Fingerprint: fp, Severity: inc.Severity,
			Object: inc.Object, Container: inc.Container, Mapped: inc.Object.Kind != "",
			Description: strings.TrimSpace(strings.TrimSuffix(inc.Text, rules.UnmappedNote)),
			RunbookURL:  inc.RunbookURL, Labels: labelsOf(inc.Facts), Since: inc.FirstSeen, Sinks: inc.Sinks,
		}
		if _, _, err := s.put(key, a, agreeFor(a.Name)); err != nil {
			break // full: the rest come back with Alertmanager's next notification
		}
		s.mu.Lock()
		s.byFP[fp].join = standalone // it has an incident of its own
		s.mu.Unlock()
		n++
	}
	return n
}

// labelsOf reads back the labels an alert's finding keeps as facts.
func labelsOf(facts map[string]string) map[string]string {
	labels := map[string]string{}
	for k, v := range facts {
		if name, ok := strings.CutPrefix(k, "label."); ok {
			labels[name] = v
		}
	}
	return labels
}
