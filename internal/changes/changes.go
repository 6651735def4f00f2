// Package changes keeps a bounded record of what changed in the cluster
// just before something broke: each workload's last rollouts (what changed
// in the pod template, by whom, which revision) and when the ConfigMaps
// and Secrets the workloads read last changed. Most crashes follow a
// change (issue #33); an alert that says which one saves the first ten
// minutes of an incident.
//
// It is fed from what herald already watches: the watcher's workload
// informers let it see each object before their transform strips the
// pod template and managed fields (watcher.ObserveBeforeStrip), and it
// keeps a digest of the template, never the object. ConfigMaps and
// Secrets are watched as metadata only. Nothing here reads or holds an
// env value, an argument or a ConfigMap's or Secret's data.
//
// The record lives in memory: after a restart herald knows each
// workload's template as it found it and the last spec write the managed
// fields name, not what that write changed (Report says so). Reading the
// previous ReplicaSet or ControllerRevision would recover the diff, at an
// API call per workload at start or a cache of every ReplicaSet's
// template; not done, for now.
package changes

import (
	"context"
	"fmt"
	"hash/maphash"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/herald-k8s/herald/watcher"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
)

// Options bound the record; zero values take the defaults.
type Options struct {
	// PerWorkload is the number of rollouts kept per workload, the one
	// herald found at start included (default 5).
	PerWorkload int
	// MaxWorkloads and MaxObjects bound the workloads and the
	// ConfigMaps and Secrets recorded (defaults 20,000 and 100,000);
	// those beyond are counted and said in reports, not recorded.
	MaxWorkloads int
	MaxObjects   int
	// Redact cleans a change-cause annotation, which can hold a command
	// line with a secret in it; nil: change-causes are not kept.
	Redact func(string) string
	// Now is the clock (tests); nil: time.Now.
	Now func() time.Time
	// ObjectKinds are the kinds whose change times are recorded, of
	// ConfigMap and Secret (nil: both): herald may be allowed to watch
	// ConfigMaps and not Secrets.
	ObjectKinds []string
}

// WorkloadKinds are the kinds whose rollouts are recorded.
var WorkloadKinds = []string{"Deployment", "StatefulSet", "DaemonSet"}

// Changes is the record. It is safe for concurrent use.
type Changes struct {
	opts    Options
	logger  *slog.Logger
	now     func() time.Time
	hash    hasher
	started time.Time
	objInfs []cache.SharedIndexInformer
	kinds   []string
	tracked []string // ConfigMap, Secret: those whose changes are recorded

	mu             sync.Mutex
	workloads      map[watcher.Key]*workload
	objects        map[objectKey]*objectState
	refused        int // workloads not recorded (MaxWorkloads)
	refusedObjects int
}

// New makes the record and registers it to see kinds' workloads (nil:
// WorkloadKinds) before w's transform strips them: call it before
// anything makes an informer of those kinds, then Watch once the
// watcher's other users have said what its cache keeps. meta lists and
// watches ConfigMap and Secret metadata (nil: their changes are not
// recorded, and reports do not say so); Start runs those informers,
// while w's run with w.
func New(w *watcher.Watcher, meta metadata.Interface, kinds []string, opts Options, logger *slog.Logger) (*Changes, error) {
	if kinds == nil {
		kinds = WorkloadKinds
	}
	c := newChanges(opts, logger)
	c.kinds = kinds
	for _, kind := range kinds {
		if !slices.Contains(WorkloadKinds, kind) {
			return nil, fmt.Errorf("change record: %s is not a workload kind herald records", kind)
		}
		if err := w.ObserveBeforeStrip(kind, c.observe); err != nil {
			return nil, fmt.Errorf("change record: %w", err)
		}
		// Deletions carry no change to diff: the record only forgets.
		if err := w.ObserveDeletes(kind, func(key watcher.Key, uid string) { c.forget(key, types.UID(uid)) }); err != nil {
			return nil, fmt.Errorf("change record: %w", err)
		}
	}
	if meta == nil {
		c.tracked = nil
		return c, nil
	}
	for _, kind := range c.tracked {
		if _, ok := objectResources[kind]; !ok {
			return nil, fmt.Errorf("change record: %s is neither ConfigMap nor Secret", kind)
		}
		inf, err := c.objectInformer(meta, kind)
		if err != nil {
			return nil, fmt.Errorf("change record for %ss: %w", kind, err)
		}
		c.objInfs = append(c.objInfs, inf)
	}
	return c, nil
}

// Watch makes w's informers for the recorded kinds that no rule made, and
// pins them, so that a reload that drops every rule on a kind does not
// end its record.
func (c *Changes) Watch(w *watcher.Watcher) error {
	for _, kind := range c.kinds {
		w.Pin(kind)
		if _, err := w.Informer(kind); err != nil {
			return fmt.Errorf("change record: %w", err)
		}
	}
	return nil
}

// newChanges makes an empty record, hooked to nothing.
func newChanges(opts Options, logger *slog.Logger) *Changes {
	if opts.PerWorkload <= 0 {
		opts.PerWorkload = 5
	}
	if opts.MaxWorkloads <= 0 {
		opts.MaxWorkloads = 20000
	}
	if opts.MaxObjects <= 0 {
		opts.MaxObjects = 100000
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	tracked := opts.ObjectKinds
	if tracked == nil {
		tracked = []string{"ConfigMap", "Secret"}
	}
	return &Changes{opts: opts, tracked: tracked, logger: logger, now: now, hash: hasher{seed: maphash.MakeSeed()}, started: now(),
		workloads: map[watcher.Key]*workload{}, objects: map[objectKey]*objectState{}}
}

// Start runs the ConfigMap and Secret informers until ctx ends; it does
// not block.
func (c *Changes) Start(ctx context.Context) {
	for _, inf := range c.objInfs {
		go inf.RunWithContext(ctx)
	}
}

// Synced reports whether the ConfigMaps and Secrets have been listed
// (the workloads sync with the watcher).
func (c *Changes) Synced() bool {
	for _, inf := range c.objInfs {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}
