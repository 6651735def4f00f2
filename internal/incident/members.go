package incident

import (
	"slices"
	"strconv"
	"strings"

	"github.com/herald-k8s/herald/internal/rules"
)

// Members. A grouped incident counts every pod of its workload that has
// the problem, and anyone who can create pods decides how many that is
// and how long their names are (3,000 pods of 250 characters are 800 KB).
// So what an incident carries — in its notifications and in the ledger —
// is bounded: the number of members (MemberCount) and a sample of them
// (Members, at most MaxMemberSample, the smallest keys). The whole set is
// kept in memory only, where the tracker needs it to tell a member that
// leaves from one that never joined; after a restart it is rebuilt from
// the cache by the start-up reconcile (MembersSeen).

// MaxMemberSample bounds the member keys an incident keeps in its
// notifications and its ledger entry.
const MaxMemberSample = 20

// membersShown is how many member names a message lists before "and N
// more".
const membersShown = 5

// hasMember reports whether object is a member now.
func (inc *Incident) hasMember(object string) bool {
	_, ok := inc.members[object]
	return ok
}

// addMember makes object a member. A restored member not seen since the
// restore (unseen) is probably this one coming back: it is counted once.
func (inc *Incident) addMember(object string) {
	if inc.hasMember(object) {
		return
	}
	if inc.members == nil {
		inc.members = map[string]struct{}{}
	}
	inc.members[object] = struct{}{}
	if inc.unseen > 0 {
		inc.unseen--
	} else {
		inc.MemberCount++
	}
	i, _ := slices.BinarySearch(inc.Members, object)
	switch {
	case len(inc.Members) < MaxMemberSample:
		inc.Members = slices.Insert(inc.Members, i, object)
	case i < len(inc.Members): // among the smallest: the largest makes room
		inc.Members = slices.Insert(inc.Members[:len(inc.Members)-1], i, object)
	}
}

// removeMember drops object from the members, reporting whether it was
// one. A sample member that leaves is replaced by the smallest member not
// in the sample.
func (inc *Incident) removeMember(object string) bool {
	if !inc.hasMember(object) {
		return false
	}
	delete(inc.members, object)
	inc.MemberCount--
	i, found := slices.BinarySearch(inc.Members, object)
	if !found {
		return true
	}
	inc.Members = slices.Delete(inc.Members, i, i+1)
	if len(inc.members) > len(inc.Members) {
		next := ""
		for m := range inc.members {
			if _, in := slices.BinarySearch(inc.Members, m); !in && (next == "" || m < next) {
				next = m
			}
		}
		j, _ := slices.BinarySearch(inc.Members, next)
		inc.Members = slices.Insert(inc.Members, j, next)
	}
	return true
}

// restoreMembers rebuilds the in-memory set of an incident read from the
// ledger: its sample is all that is known; the rest (unseen) are counted
// until the start-up reconcile has seen them again. A ledger written
// before members were bounded has every member and no count.
func (inc *Incident) restoreMembers() bool {
	if len(inc.Members) == 0 {
		// A ledger entry without members (hand-edited, or truncated):
		// its object is the one member it surely has, and without one
		// no reconcile would ever find it to resolve it.
		key, ok := objectKey(inc.Object)
		if !ok {
			return false
		}
		inc.Members = []string{key}
	}
	inc.Members = slices.Clone(inc.Members)
	slices.Sort(inc.Members)
	inc.Members = slices.Compact(inc.Members)
	if inc.MemberCount == 0 {
		inc.MemberCount = len(inc.Members)
	}
	inc.members = make(map[string]struct{}, len(inc.Members))
	for _, m := range inc.Members {
		inc.members[m] = struct{}{}
	}
	if len(inc.Members) > MaxMemberSample {
		inc.Members = slices.Clone(inc.Members[:MaxMemberSample])
	}
	inc.MemberCount = max(inc.MemberCount, len(inc.members))
	inc.unseen = inc.MemberCount - len(inc.members)
	return true
}

// objectKey is the key the controller reconciles ref under (watcher.Key's
// form, which this package may not import).
func objectKey(ref rules.ObjectRef) (string, bool) {
	switch {
	case ref.Kind == "" || ref.Name == "":
		return "", false
	case ref.Namespace == "":
		return ref.Kind + "/" + ref.Name, true
	}
	return ref.Kind + "/" + ref.Namespace + "/" + ref.Name, true
}

// MembersSeen ends the start-up reconcile: every object that has an
// incident's problem has been reconciled, so members restored from the
// ledger and not seen again have left (they were deleted, or recovered,
// while herald was away). Their incidents count only what was seen; a
// grouped incident whose count so changed says so (an update, paced as
// usual).
func (t *Tracker) MembersSeen() []Notification {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.opts.Now()
	var notes []Notification
	for _, fp := range t.sortedOpen() {
		inc := t.open[fp]
		if inc.unseen == 0 {
			continue
		}
		inc.MemberCount -= inc.unseen
		inc.unseen = 0
		t.touch(inc)
		// With no member left, the next reconcile of an object still
		// indexed (leave keeps one, and asks for it) resolves it.
		if inc.Grouped && inc.MemberCount > 0 && inc.MemberCount != inc.NotifiedMembers {
			if n, ok := t.pacer.update(inc, now, true); ok {
				notes = append(notes, n)
			}
		}
	}
	return notes
}

// MemberNames lists the names of an incident's first members, and how
// many more there are: "api-0, api-1, api-2, api-3, api-4 and 2,995
// more". Names are the object keys without kind and namespace when every
// member is in the incident's namespace.
func (inc *Incident) MemberNames() string {
	shown := inc.Members[:min(len(inc.Members), membersShown)]
	names := make([]string, len(shown))
	for i, m := range shown {
		if inc.Rule == OverflowRule { // of any kind: "Pod/api-0"
			kind, _, _ := strings.Cut(m, "/")
			names[i] = kind + "/" + memberName(m, inc.Object.Name)
		} else {
			names[i] = memberName(m, inc.Object.Namespace)
		}
	}
	s := strings.Join(names, ", ")
	if more := inc.MemberCount - len(shown); more > 0 {
		s += " and " + Thousands(more) + " more"
	}
	return s
}

// memberName is a member key without its kind, and without its namespace
// when that is ns.
func memberName(key, ns string) string {
	_, rest, ok := strings.Cut(key, "/")
	if !ok {
		return key
	}
	if n, name, ok := strings.Cut(rest, "/"); ok && n == ns {
		return name
	}
	return rest
}

// Thousands writes n with thousands separators: 2950 → "2,950".
func Thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
