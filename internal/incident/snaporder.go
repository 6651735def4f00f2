package incident

import (
	"slices"
	"strings"
)

// snapshotOrder keeps the ledger's snapshots in ID order without sorting
// every incident at every write. Under churn the ledger is written
// several times a second, and sorting its thousands of incidents by their
// long IDs each time was a tenth of its writer's CPU; between two writes,
// a few incidents come and go. So the order of the last snapshot is kept,
// and only the incidents new since then are sorted and put in their
// places.
type snapshotOrder struct {
	// last is the tracker's incidents in the last snapshot, by ID;
	// spare is the slice before it, reused for the next one.
	last, spare []*Incident
	// call numbers the snapshots; an incident's listed and ordered say
	// which snapshot last listed it and which last found it in last.
	call uint64
}

// sorted returns all (the incidents of this snapshot, each once) by ID,
// and keeps that order for the next call. The slice it returns is the
// order's own and valid only until the next call: copy it before the
// tracker's lock is let go. Expects the tracker's lock.
func (o *snapshotOrder) sorted(all []*Incident) []*Incident {
	o.call++
	for _, inc := range all {
		inc.listed = o.call
	}
	// What is still here, in the order it was.
	kept := o.spare[:0]
	for _, inc := range o.last {
		if inc.listed == o.call && inc.ordered != o.call {
			inc.ordered = o.call
			kept = append(kept, inc)
		}
	}
	var added []*Incident
	for _, inc := range all {
		if inc.ordered != o.call {
			inc.ordered = o.call
			added = append(added, inc)
		}
	}
	result, spare := kept, o.last
	if len(added) > 0 {
		slices.SortFunc(added, byID)
		result, spare = mergeByID(o.last[:0], kept, added), kept
	}
	// Neither slice holds on to an incident the tracker let go.
	clear(spare[:cap(spare)])
	clear(result[len(result):cap(result)])
	o.last, o.spare = result, spare[:0]
	return result
}

// mergeByID appends to out kept (many) and added (few), both sorted by
// ID, in order, finding each added one's place by a binary search rather
// than comparing every ID of kept.
func mergeByID(out, kept, added []*Incident) []*Incident {
	from := 0
	for _, inc := range added {
		at, _ := slices.BinarySearchFunc(kept[from:], inc, byID)
		out = append(out, kept[from:from+at]...)
		out = append(out, inc)
		from += at
	}
	return append(out, kept[from:]...)
}

func byID(a, b *Incident) int { return strings.Compare(a.ID, b.ID) }
