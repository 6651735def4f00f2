package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// envMemoryLimit carries the container's memory limit in bytes; the chart
// sets it from the pod spec (a resourceFieldRef on limits.memory).
const envMemoryLimit = "HERALD_MEMORY_LIMIT"

// memoryLimitShare is the part of the container's limit the Go heap may
// use before the collector works harder: the rest is for what GOMEMLIMIT
// does not count (the binary's mapped pages, buffers outside the heap)
// and for a spike while the collector catches up.
const memoryLimitShare = 0.85

// setMemoryLimit gives the Go runtime a soft memory limit under the
// container's, so the collector tightens before the kernel kills herald
// (without it, the heap may double its live size between collections).
// An explicit GOMEMLIMIT wins; without HERALD_MEMORY_LIMIT nothing is
// set. It returns the limit set (0: none) or why the variable is wrong.
func setMemoryLimit(getenv func(string) string) (int64, error) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, nil // the runtime read it already
	}
	raw := strings.TrimSpace(getenv(envMemoryLimit))
	if raw == "" {
		return 0, nil
	}
	bytes, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || bytes <= 0 {
		return 0, fmt.Errorf("%s=%q is not a number of bytes; no memory limit set (the chart sets it from resources.limits.memory)", envMemoryLimit, raw)
	}
	limit := int64(float64(bytes) * memoryLimitShare)
	debug.SetMemoryLimit(limit)
	return limit, nil
}

// freeAfterSync hands the initial lists' transient peak back to the OS
// once the cache has synced: they decode every object but pods whole
// before the transform trims it, and pages of a list are held until
// their objects are cached; without this, that peak would stay as RSS
// for the life of the process.
func freeAfterSync(ctx context.Context, synced func() bool) {
	if wait.PollUntilContextCancel(ctx, time.Second, true, func(context.Context) (bool, error) { return synced(), nil }) == nil {
		debug.FreeOSMemory()
	}
}
