// Command herald-bench measures herald against a real control plane:
// memory and sync time per cached pod, and crash-to-notification latency
// beside the bare watch floor. `make bench` runs it; see
// docs/performance.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/herald-k8s/herald/internal/bench"
)

func main() {
	bench.RunFloorNotifierIfAsked()
	herald := flag.String("herald", "bin/herald", "the herald binary to measure (make build)")
	sizes := flag.String("pods", "1000,10000", "comma-separated pod counts to measure sync and memory at (measured in ascending order)")
	churnAt := flag.Int("churn-at", 0, "pod count to run the churn steps at (default: the largest)")
	rates := flag.String("rates", "10,20,100,500,1000", "status patches per second to offer (80% and 100% of r_max are added; rates above r_max are skipped)")
	step := flag.Duration("step", 10*time.Second, "how long each rate is offered")
	drain := flag.Duration("drain", 30*time.Second, "at most how long to wait for late events after a step")
	dir := flag.String("out", ".cache/bench", "directory for bench.json, profiles and logs")
	onlyAsked := flag.Bool("only-asked", false, "offer only -rates, not 80% and 100% of r_max")
	noContext := flag.Bool("no-context", false, "run herald with its crash context off (context.enabled: false); on by default, as in herald")
	noPprof := flag.Bool("no-pprof", false, "run herald as deployed, without --pprof: no profiles, and memory read without forcing a collection first (the heap column is then the heap allocated, garbage included); for the RSS a cluster sees")
	gomaxprocs := flag.Int("gomaxprocs", 0, "run herald and the floor and cache notifiers alike with GOMAXPROCS=N (0: as the environment has it, else Go's default); the load generator and the floor watch are not limited")
	soak := flag.Duration("soak", 0, "instead of the benchmark, churn at half of r_max for this long and sample herald every 10 s (make soak; reads only -herald, -soak-pods and -out)")
	soakPods := flag.Int("soak-pods", 5000, "pods for -soak")
	cluster := flag.Bool("cluster", false, "add what goes with the pods in a real cluster: a Deployment, a ReplicaSet, a ConfigMap and a Secret per 10 pods and a Node per 150 (make bench-scale), with rules on the Deployments and Nodes; the bare LIST then covers every kind herald lists")
	apiserverMemoryLimit := flag.String("apiserver-memory-limit", "", "the API server's GOMEMLIMIT (as 16GiB): at the largest sizes its garbage outgrows a 24 GB machine")
	memoryLimit := flag.String("memory-limit", "", "herald's container memory limit, e.g. 512Mi: herald is told of it (HERALD_MEMORY_LIMIT, as the chart does; Go's soft limit is then 85% of it) and, where the bench can make a memory cgroup (as root), the kernel holds each herald to it as in a container, reclaiming and, past it, killing")
	flag.Parse()
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *soak > 0 {
		report, err := bench.Soak(ctx, bench.SoakOptions{Herald: *herald, Pods: *soakPods, Duration: *soak, Fraction: 0.5, Dir: *dir, Logf: logf})
		if report != nil {
			report.Table(os.Stdout)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "herald-bench:", err)
			os.Exit(1)
		}
		return
	}

	opts := bench.Options{Herald: *herald, ChurnAt: *churnAt, OnlyAsked: *onlyAsked, NoContext: *noContext, NoPprof: *noPprof, GOMAXPROCS: *gomaxprocs, Step: *step, Drain: *drain, Dir: *dir, Logf: logf, Cluster: *cluster, APIServerMemoryLimit: *apiserverMemoryLimit}
	if *memoryLimit != "" {
		q, err := resource.ParseQuantity(*memoryLimit)
		if err != nil || q.Value() < 32<<20 {
			fmt.Fprintf(os.Stderr, "herald-bench: -memory-limit: %q is not a quantity of at least 32Mi (as in a container's limits.memory: 512Mi)\n", *memoryLimit)
			os.Exit(2)
		}
		opts.MemoryLimit = q.Value()
	}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 10 {
			fmt.Fprintf(os.Stderr, "herald-bench: -pods: %q is not a pod count of at least 10\n", s)
			os.Exit(2)
		}
		opts.Sizes = append(opts.Sizes, n)
	}
	slices.Sort(opts.Sizes) // the cluster only grows
	if *churnAt != 0 && !slices.Contains(opts.Sizes, *churnAt) {
		fmt.Fprintf(os.Stderr, "herald-bench: -churn-at %d is not one of -pods %s: the churn steps run at one of the sizes measured\n", *churnAt, *sizes)
		os.Exit(2)
	}
	for _, s := range strings.Split(*rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || r <= 0 {
			fmt.Fprintf(os.Stderr, "herald-bench: -rates: %q is not a positive rate\n", s)
			os.Exit(2)
		}
		opts.Rates = append(opts.Rates, r)
	}
	start := time.Now()
	report, err := bench.Run(ctx, opts)
	if report != nil {
		report.Table(os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "herald-bench:", err)
		os.Exit(1)
	}
	fmt.Printf("\nreport: %s/bench.json; profiles: %s/heap-*.pprof, %s/cpu-{idle,<rate>}.pprof, %s/allocs-<rate>-{start,end}.pprof; took %s\n", *dir, *dir, *dir, *dir, time.Since(start).Round(time.Second))
}
