# herald's build. `make test` and `make demo` set up everything they need
# on a machine that has only Go and gcc: the control-plane binaries are
# built from the Go module proxy into .cache/ the first time.

GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.revision=$(REVISION) -X main.buildDate=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

.PHONY: all build image test vet testenv demo demo-install clean bench bench-scale fuzz soak

all: build

# The same static build the Dockerfile makes (TestStaticBuild checks it).
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/herald ./cmd/herald

# herald's image without Docker, equal to the Dockerfile's: an OCI image
# layout in .cache/image with an index for IMAGE_PLATFORMS, tagged with
# the chart's appVersion. IMAGE=REGISTRY/REPOSITORY:TAG also pushes it (to
# a registry that needs no login; PLAIN_HTTP=1 for one on http://).
IMAGE_PLATFORMS ?= linux/amd64,linux/arm64
image:
	$(GO) run ./internal/ociimage/build -out .cache/image -platforms $(IMAGE_PLATFORMS) $(if $(IMAGE),-push $(IMAGE)) $(if $(PLAIN_HTTP),-plain-http)

# etcd, kube-apiserver, the real node's kubelet, scheduler and
# controller-manager and kube-proxy, helm, promtool, Alertmanager and the
# OCI registry for the tests (minutes the first
# time), and Debian's containerd, runc and CNI plugins (apt-get, as root)
# when missing: docs/testing.md.
testenv:
	$(GO) run ./internal/testenv/build

vet:
	$(GO) vet ./...

# Most tests wait on timers, not on the CPU: TEST_P packages run side by
# side, the real node's among them (its pods wait on the kubelet's
# back-offs far more than they compute). Within cmd/herald the end-to-end
# tests run side by side too, paced by their own weights
# (cmd/herald/parallel_test.go); the real node's run all at once
# (internal/realnode/main_test.go). TEST_PARALLEL only has to let them
# all ask; elsewhere only a few unit tests of a second or less are
# marked t.Parallel().
TEST_P ?= 3
TEST_PARALLEL ?= 100
# internal/bench runs after them, beside nothing but make fuzz at the
# lowest priority (nice 19): it measures how many patches a second the
# control plane takes (r_max) before it offers 50/s, and beside other
# packages that capacity is theirs too (46/s, one run in two), while the
# fuzz targets only take what it leaves idle (r_max 159/s beside them,
# 196/s alone; the two 117 s, one after the other 151 s).
#
# go test starts the packages in the order it is given them, TEST_P at a
# time. TEST_FIRST start first, so that none of them starts late and runs
# on nearly alone: cmd/herald, the longest (about 12 minutes); sinks,
# whose two-minute outages wait far more than they compute (started in
# go list's order, it held one of the places from minute 8 to minute
# 11); the real node's. The others follow in go list's order.
MODULE     := github.com/herald-k8s/herald
TEST_FIRST := cmd/herald sinks internal/realnode
test: testenv vet build
	$(GO) test -race -count=1 -p $(TEST_P) -parallel $(TEST_PARALLEL) -timeout 30m $(addprefix ./,$(TEST_FIRST)) \
		$$($(GO) list ./... | grep -vxF $(addprefix -e $(MODULE)/,$(TEST_FIRST) internal/bench))
	@mkdir -p .cache; nice -n 19 $(MAKE) --no-print-directory fuzz > .cache/fuzz.log 2>&1 & fuzz=$$!; \
	$(GO) test -race -count=1 -timeout 10m ./internal/bench; bench=$$?; \
	wait $$fuzz; fuzzed=$$?; cat .cache/fuzz.log; \
	test $$bench -eq 0 -a $$fuzzed -eq 0

# Every fuzz target for a short run (FUZZ_RUNS inputs each; counted, not
# timed: a -fuzztime duration trips a coordinator race in go1.26.8),
# FUZZ_JOBS targets at a time with one worker each: linking a target's
# binary keeps one core busy, so two side by side fill both. Each
# target's output is printed whole when it ends.
# Longer runs: make fuzz FUZZ_RUNS=1000000
FUZZ_RUNS ?= 3000
FUZZ_JOBS ?= 2
FUZZ_TARGETS := ./config:FuzzParse ./internal/rules:FuzzEvaluate ./internal/incident:FuzzLedgerDecode ./sinks/slack:FuzzRender ./internal/enrich:FuzzCleanTail ./sinks/teams:FuzzRender ./sinks/webhook:FuzzDocumentedTemplates ./watcher:FuzzDecodeCompactPod ./sinks:FuzzAppendStringIsEncodingJSON ./internal/redact:FuzzRedactInContext
fuzz:
	@printf '%s\n' $(FUZZ_TARGETS) | xargs -P $(FUZZ_JOBS) -I{} sh -c '\
		t={}; pkg=$${t%%:*}; name=$${t##*:}; \
		out=$$($(GO) test -run "^$$" -fuzz "^$$name\$$" -fuzztime $(FUZZ_RUNS)x -fuzzminimizetime 2s -parallel 1 $$pkg 2>&1); rc=$$?; \
		printf "fuzz %s (%s), $(FUZZ_RUNS) inputs\n%s\n" "$$name" "$$pkg" "$$out"; exit $$rc'

demo: testenv build
	$(GO) run ./internal/demo -herald bin/herald -config examples/demo.yaml

clean:
	rm -rf bin .cache

# The performance benchmark against a real control plane (docs/performance.md).
# BENCH_PODS=1000,10000,50000 for the full table.
BENCH_PODS ?= 1000,10000
bench: testenv build
	$(GO) run ./cmd/herald-bench -herald bin/herald -pods $(BENCH_PODS)

# herald at the size of the largest clusters (docs/performance.md, "At the
# size of the largest clusters"): SCALE_PODS pods with a Deployment, a
# ReplicaSet, a ConfigMap and a Secret per 10 and a Node per 150, herald
# told a 512Mi memory limit, 20 status patches/s for a minute. Not part of
# make test or make bench: about 25 minutes. The API server needs the
# machine: held to GOMEMLIMIT=16GiB it fits in 24 GB; unheld it neared
# 21 GB and the run was stopped.
SCALE_PODS ?= 150000
bench-scale: testenv build
	$(GO) run ./cmd/herald-bench -herald bin/herald -pods $(SCALE_PODS) -cluster -memory-limit 512Mi \
		-apiserver-memory-limit 16GiB -rates 20 -only-asked -step 60s -out .cache/bench-scale-$(SCALE_PODS)

# Steady churn at half of r_max, RSS and goroutines sampled every 10 s
# (docs/reliability.md). make soak DURATION=1h
DURATION ?= 10m
soak: testenv build
	$(GO) run ./cmd/herald-bench -herald bin/herald -soak $(DURATION) -out .cache/soak

# herald installed as a user installs it, on the real node, in about two
# minutes: the image built by make image's code and pushed to a registry
# on this machine, the chart pushed as an OCI artifact, helm install,
# a crash loop's Slack message, a refused upgrade, a rolling upgrade, a
# failover, helm test and helm uninstall (internal/realnode).
demo-install: testenv
	$(GO) test -count=1 -run 'TestHelmInstall$$' -v ./internal/realnode
