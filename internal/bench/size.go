package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// size grows the cluster to n pods, then times a bare LIST and herald's
// sync and measures herald's memory once it works.
func (r *run) size(ctx context.Context, n int) error {
	if err := createPods(ctx, r.client, r.pods.n, n, Patchers, r.opts.Logf); err != nil {
		return err
	}
	r.pods.grow(n)
	res := SizeResult{Pods: n}
	if r.opts.Cluster {
		want := objectsFor(n)
		if err := createObjects(ctx, r.client, func(ctx context.Context, node string) error { return r.kubelet.Register(ctx, r.client, node) },
			r.objects, want, r.opts.Logf); err != nil {
			return err
		}
		r.objects = want
		res.Objects = &want
	}
	probe := apiserverProbe{env: r.env, client: r.client}
	pages := 0
	var err error
	res.APIServer.List, err = probe.measure(ctx, func() error {
		start := time.Now()
		opts := metav1.ListOptions{Limit: 500} // the page size informers use
		for {
			list, err := r.client.CoreV1().Pods(Namespace).List(ctx, opts)
			if err != nil {
				return err
			}
			pages++
			if opts.Continue = list.Continue; opts.Continue == "" {
				break
			}
		}
		if r.opts.Cluster {
			more, err := listObjects(ctx, r.client)
			pages += more
			if err != nil {
				return err
			}
		}
		res.BareList = Seconds(time.Since(start))
		return nil
	})
	if err != nil {
		return err
	}
	// herald's start as client-go made it before the streaming list
	// (pages of LIST, then a watch), measured first; then as it runs:
	// the watch's initial events where the API server offers them.
	pagedDir := filepath.Join(r.opts.Dir, "paged-list")
	if err := os.MkdirAll(pagedDir, 0o755); err != nil {
		return err
	}
	var paged *heraldProc
	res.APIServer.StartPaged, err = probe.measure(ctx, func() error {
		var err error
		if paged, err = startHerald(r.opts.Herald, r.kubeconfig, r.config, pagedDir, n, r.opts.GOMAXPROCS, !r.opts.NoPprof, r.limit, slices.Concat(r.heraldEnv, []string{"KUBE_FEATURE_WatchListClient=false"})...); err != nil {
			return err
		}
		sync, err := paged.waitSynced(5 * time.Minute)
		res.SyncPaged = Seconds(sync)
		return err
	})
	if paged != nil {
		paged.stop()
	}
	if err != nil {
		return err
	}
	var h *heraldProc
	res.APIServer.StartStreaming, err = probe.measure(ctx, func() error {
		var err error
		if h, err = startHerald(r.opts.Herald, r.kubeconfig, r.config, r.opts.Dir, n, r.opts.GOMAXPROCS, !r.opts.NoPprof, r.limit, r.heraldEnv...); err != nil {
			return err
		}
		sync, err := h.waitSynced(5 * time.Minute)
		res.Sync = Seconds(sync)
		return err
	})
	if h != nil {
		defer h.stop()
	}
	if err != nil {
		return err
	}
	if err := h.waitWorking(5 * time.Minute); err != nil {
		return err
	}
	if res.Memory, err = h.memory(filepath.Join(r.opts.Dir, fmt.Sprintf("heap-%d.pprof", n))); err != nil {
		return err
	}
	if res.Container = h.container(); res.Container != nil {
		r.opts.Logf("bench: %d pods: herald in its memory cgroup since its start: %s", n, res.Container)
	}
	r.opts.Logf("bench: %d pods: bare LIST %.2fs (%d pages), herald synced in %.2fs (%.2fs with paged lists), RSS %.1f MB (anon %.1f, file %.1f), heap %.1f MB",
		n, res.BareList, pages, res.Sync, res.SyncPaged, mb(res.Memory.RSS), mb(res.Memory.RSSAnon), mb(res.Memory.RSSFile), mb(res.Memory.Heap))
	for _, c := range []struct {
		what string
		cost APIServerCost
	}{{"a bare LIST", res.APIServer.List}, {"herald's start, paged lists", res.APIServer.StartPaged}, {"herald's start, streaming list", res.APIServer.StartStreaming}} {
		r.opts.Logf("bench: %d pods: the API server during %s: %.2f CPU-s, %.1f MB allocated, RSS +%.1f MB at its peak, %d LISTs of pods",
			n, c.what, c.cost.CPUSeconds, mb(c.cost.Allocated), mb(c.cost.PeakRSSGrowth), c.cost.PodLists)
	}
	r.report.Sizes = append(r.report.Sizes, res)
	return nil
}
