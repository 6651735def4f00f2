package incident

import (
	"slices"
	"strconv"
	"strings"
)

// The ledger's archive. Most of a ledger after a storm is resolved
// incidents whose deliveries are done: they do not change until they
// expire, days later. Spread over the hashed shards with the open ones,
// every flush that touched a shard rewrote them with it — at 100 crashes
// a second, every shard every second, megabytes a second to etcd for a
// handful of changes. The archive keeps them apart, in shards written
// while they fill and then never again ("sealed"); a sealed shard is
// deleted once none of what it holds is current. A flush writes the open
// incidents' shards that changed and the one shard filling now.
//
// An incident's copy in a sealed shard can go stale (it opened again, or
// a delivery was retried): the stale copy stays until its shard goes.
// Every shard carries the generation of the save that wrote it, and on
// load the copy from the newest generation wins; a stale copy that
// outlives its incident is past the retention and dropped by the
// tracker's next snapshot.

// Where a filling shard is sealed. A save rewrites the filling shard
// whole, so the smaller shards are sealed the less each save sends (under
// churn, most of what it sends); the more shards there are, the more
// ConfigMaps the ledger keeps and deletes. A shard is sealed at a
// sealsPerKind-th of what its kind holds, between minSealBytes and
// maxSealBytes: an archive or journal of up to 4 MiB is kept in about 32
// shards, a larger one in shards of 128 KiB. herald-bench's churn (100
// crashes a second, 10,000 pods) sent 99 KB a write with every shard
// sealed at 128 KiB (BenchmarkLedgerChurn: 86 KB a save).
const (
	minSealBytes = 16 << 10
	maxSealBytes = 128 << 10
	sealsPerKind = 32
)

// sealSize is where a filling shard of a kind holding holding bytes is
// sealed.
func sealSize(holding int) int {
	return min(max(holding/sealsPerKind, minSealBytes), maxSealBytes)
}

// archivable: resolved with every delivery done.
//
// A wait (waits.go) is not: it is current until it ends, and then it must
// leave the ledger at the next write, not stay in a sealed shard.
func archivable(inc *Incident) bool {
	return !inc.ResolvedAt.IsZero() && len(inc.Pending) == 0 && inc.Ended != EndedWaiting
}

// archive tracks which archive shard holds each archived incident's
// current copy. The journal (journal.go) is another archive, of the
// open incidents' changes: its shards fill and seal the same way.
type archive struct {
	// kind names its shards, <ledger>-<kind>-<n> ("a": the archive,
	// "j": the journal); sealAt is where a filling shard is sealed
	// (sealSize: set by each save for what the kind holds, and raised
	// for a burst of tombstones).
	kind   string
	sealAt int

	home   map[string]archived      // incident ID → where its current copy is
	shards map[string]*archiveShard // shard name → its bookkeeping
	// filling is the shard new entries go to ("" until one is needed);
	// next numbers the next one.
	filling string
	next    int
}

type archived struct {
	shard string
	rev   uint64
}

type archiveShard struct {
	// entries is what it holds, in order, until it is sealed and
	// written; then nil: it is never written again.
	entries []archiveEntry
	live    int  // entries whose current copy this is
	size    int  // bytes of the entries' JSON
	dirty   bool // changed since it was last written
	sealed  bool // full: no more entries join it
}

type archiveEntry struct {
	id   string
	size int
}

func newArchive() *archive { return newFillAndSeal("a", maxSealBytes) }

func newFillAndSeal(kind string, sealAt int) *archive {
	return &archive{kind: kind, sealAt: sealAt, home: map[string]archived{}, shards: map[string]*archiveShard{}}
}

// shardName is <ledger>-<kind>-<n>: apart from the hashed shards'
// <ledger>-<count>-<index>.
func (a *archive) shardName(ledger string, n int) string {
	return ledger + "-" + a.kind + "-" + strconv.Itoa(n)
}

// archiveShardNumber parses name as an archive shard of ledger.
func archiveShardNumber(ledger, name string) (int, bool) { return fillAndSealNumber(ledger, "a", name) }

// fillAndSealNumber parses name as a shard of ledger's kind ("a", "j").
func fillAndSealNumber(ledger, kind, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, ledger+"-"+kind+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

// what names the kind of shard, for messages.
func (a *archive) what() string {
	if a.kind == "j" {
		return "journal"
	}
	return "archive"
}

// bytes is the data of every shard as written or to be written.
func (a *archive) bytes() int {
	n := 0
	for _, sh := range a.shards {
		n += sh.size
	}
	return n
}

// dataBytes is the length of every shard's data as written: its
// entries, a comma after each but the last, and the brackets.
func (a *archive) dataBytes() int {
	return a.bytes() + len(a.shards)
}

// loaded records a shard read from the API server: sealed, size bytes
// of data, holding the current copies of ids.
func (a *archive) loaded(name string, n, size int, ids []string) {
	sh := a.shards[name]
	if sh == nil {
		// size less its closing bracket: as keep counts a shard's bytes
		// (each entry and a separator).
		sh = &archiveShard{size: max(size-1, 0)}
		a.shards[name] = sh
	}
	for _, id := range ids {
		a.home[id] = archived{shard: name}
		sh.live++
	}
	a.next = max(a.next, n+1)
}

// keep makes the incident's current copy (at rev, size bytes of JSON)
// part of the archive: nothing to do if it is there at that revision,
// else it joins the filling shard.
func (a *archive) keep(ledger, id string, rev uint64, size int) {
	if h, ok := a.home[id]; ok {
		if h.rev == rev {
			return
		}
		a.forget(id)
	}
	if a.filling == "" || a.shards[a.filling].size+size+1 > a.sealAt && len(a.shards[a.filling].entries) > 0 {
		if f := a.shards[a.filling]; f != nil {
			f.sealed = true // written once more if dirty, then left alone
			if !f.dirty {
				f.entries = nil // written as it is: never again
			}
		}
		a.filling = a.shardName(ledger, a.next)
		a.next++
		a.shards[a.filling] = &archiveShard{}
	}
	sh := a.shards[a.filling]
	sh.entries = append(sh.entries, archiveEntry{id, size})
	sh.live++
	sh.size += size + 1
	sh.dirty = true
	a.home[id] = archived{shard: a.filling, rev: rev}
}

// forget drops the incident's archived copy from the count of its shard
// (it opened again, changed, or left the ledger). A shard still to be
// written is written without it; one sealed and written keeps it as a
// stale copy, of an older generation than the incident's current one.
func (a *archive) forget(id string) {
	h, ok := a.home[id]
	if !ok {
		return
	}
	delete(a.home, id)
	sh := a.shards[h.shard]
	sh.live--
	if sh.entries != nil {
		i := slices.IndexFunc(sh.entries, func(e archiveEntry) bool { return e.id == id })
		sh.size -= sh.entries[i].size + 1
		sh.entries = slices.Delete(sh.entries, i, i+1)
		sh.dirty = true
	}
}

// unwritten lists the shards whose content changed since they were
// written: the filling one, and any sealed in this save.
func (a *archive) unwritten() []string {
	var out []string
	for name, sh := range a.shards {
		if sh.dirty && len(sh.entries) > 0 {
			out = append(out, name)
		}
	}
	return oldestFirst(out)
}

// oldestFirst sorts shard names <ledger>-<kind>-<n> by n: the order they
// were made in. A shard sealed in a save is written before the one that
// took its place, and deleted before any newer one.
func oldestFirst(names []string) []string {
	number := func(name string) int {
		n, _ := strconv.Atoi(name[strings.LastIndexByte(name, '-')+1:])
		return n
	}
	slices.SortFunc(names, func(a, b string) int { return number(a) - number(b) })
	return names
}

// written records that shard name now holds what it should.
func (a *archive) written(name string) {
	sh := a.shards[name]
	sh.dirty = false
	if sh.sealed {
		sh.entries = nil
	}
}

// empty lists the shards holding no current copy, oldest first: to be
// deleted.
func (a *archive) empty() []string {
	var out []string
	for name, sh := range a.shards {
		if sh.live == 0 {
			out = append(out, name)
		}
	}
	return oldestFirst(out)
}

// deleted records that shard name is gone.
func (a *archive) deleted(name string) {
	delete(a.shards, name)
	if a.filling == name {
		a.filling = ""
	}
}
