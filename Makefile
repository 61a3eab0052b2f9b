# Developer and CI entry points. CI runs .ci/run, which runs "make test".

GO ?= go

# Every Go module in the repository (directories holding a go.mod).
MODULES = $(shell find . -name go.mod -not -path "./.git/*" -not -path "*/testdata/*" -not -path "*/vendor/*" -exec dirname {} \; | LC_ALL=C sort)

.PHONY: test vet fmt lint demo work bench bench-scale chaos model

# Install redis-server if missing, check gofmt, then go vet and
# go test -race in every module. See scripts/test.sh.
test:
	bash scripts/test.sh

# golangci-lint, pinned and run through "go run" (no install step), with
# the repository's .golangci.yml, in every module.
GOLANGCI_LINT ?= $(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
lint:
	@set -e; for m in $(MODULES); do echo "==> golangci-lint in $$m"; (cd $$m && GOWORK=off $(GOLANGCI_LINT) run --allow-parallel-runners --config $(CURDIR)/.golangci.yml ./...); done

# go vet in every module.
vet:
	@set -e; for m in $(MODULES); do echo "==> go vet in $$m"; (cd $$m && $(GO) vet ./...); done

# gofmt every .go file in place, listing the ones it changed.
fmt:
	@find . -name "*.go" -not -path "./.git/*" -print0 | xargs -0 -r gofmt -l -w

# The contract model (integration/model_test.go) longer than the bounded
# run of "make test" (100 sequences): MODEL_CHECKS random call sequences
# against a real redis-server, each compared call by call with the model
# of API.md. A failure prints the shrunk sequence and how to replay it.
# Example: make model MODEL_CHECKS=20000
MODEL_CHECKS ?= 5000
model:
	GOWORK=off $(GO) test -race -count=1 -v -run 'TestContractModel$$' -timeout 0 ./integration/ -rapid.checks=$(MODEL_CHECKS)

# Run the demo against a local Redis.
demo:
	$(GO) run ./cmd/redisync demo

# A go.work of every module, for editors (gopls) and commands across the
# modules from the root. It is not committed: in a workspace the go
# command selects the highest version any module requires, so the root's
# commands (the README's demo) would build with other versions than its
# go.mod gives its users, and download them first. Every other module
# reaches the root through a replace directive and builds without it.
work:
	rm -f go.work go.work.sum
	$(GO) work init $(MODULES)

# Run the benchmarks (the bench module); BENCHFLAGS="--redis host:port" uses an existing server.
bench:
	cd bench && $(GO) run . $(BENCHFLAGS)

# The scale curves (waiters, held locks, contended locks, client processes,
# Redis memory) against the peers: longer than 20 minutes, so apart from
# "make bench"; results and charts in bench/scale/.
bench-scale:
	mkdir -p bench/scale && cd bench && $(GO) run . -scenarios curves -out scale/results.json $(BENCHFLAGS)

# The fault suite (the chaos module), longer than the bounded pass that
# "make test" runs: SEEDS seeds from SEED on, a DURATION fault phase each,
# in the topologies CHAOS_TOPOLOGY names: single (one server, restarted
# without its data and put under memory pressure among its faults), replicated
# (a primary, a replica and a sentinel, with failovers, stalled replicas
# and replicas restarted empty among the faults), cluster (a Redis Cluster
# of three masters with a replica each, with masters killed and their
# replicas promoted, CLUSTER FAILOVERs, slots of held primitives migrated,
# nodes restarted and stalled replicas among the faults), netns (a
# primary, a replica and three sentinels, each server, sentinel and
# client in a Linux network namespace of its own: partitions between any
# two nodes, one-way ones, packet loss and duplication with nftables,
# failovers by the sentinels' own failure detection, split brains
# included, and clock faults on the servers; root only, skipped
# otherwise; NO_SPLIT_BRAIN=1 leaves the split brains out, CLOCK_FORWARD=1
# adds the clock faults no lease survives, counted apart), netcluster (a
# Redis Cluster of three masters with a replica each, each node in a
# namespace of its own: netns's faults on a random master, failovers by
# cluster-node-timeout, split brains measured per slot range; root only),
# a comma-separated list of them, both (single and
# replicated) or all (the default: SEEDS seeds in each of the five). See
# FAULTS.md. Every fault
# kind runs, including late delivery
# (stalls longer than the request record TTL, up to LATE_MAX;
# LATE_DELIVERY=0 leaves it out). FOREIGN=1 runs a foreign client,
# node-redisson (npm, Redisson's lock protocol written by others), beside
# the Go workers on the plain locks of the single topology. Permit accounting is strict
# (STRICT_PERMITS=2): every permit lost is a violation; STRICT_PERMITS=1
# lets counted releases that failed explain a loss (a finding printed with
# the seed's figures), STRICT_PERMITS=0 failed acquisitions as well. A failing
# seed prints the violations with a history excerpt and writes
# porcupine's HTML and the whole history under CHAOS_OUT (default
# $TMPDIR/redisync-chaos). Example: make chaos SEED=42 DURATION=5m
# CHAOS_TOPOLOGY=replicated
SEED ?= 1
SEEDS ?= 5
DURATION ?= 2m
CHAOS_TOPOLOGY ?= all
LATE_DELIVERY ?= 1
LATE_MAX ?= 30s
STRICT_PERMITS ?= 2
NO_SPLIT_BRAIN ?= 0
CLOCK_FORWARD ?= 0
FOREIGN ?= 0
CHAOS_RACE ?= -race
chaos:
	cd chaos && CHAOS_SEED=$(SEED) CHAOS_SEEDS=$(SEEDS) CHAOS_REPLICATED_SEEDS=$(SEEDS) CHAOS_CLUSTER_SEEDS=$(SEEDS) CHAOS_NETNS_SEEDS=$(SEEDS) CHAOS_NETCLUSTER_SEEDS=$(SEEDS) CHAOS_NO_SPLIT_BRAIN=$(NO_SPLIT_BRAIN) CHAOS_CLOCK_FORWARD=$(CLOCK_FORWARD) CHAOS_FOREIGN=$(FOREIGN) CHAOS_TOPOLOGY=$(CHAOS_TOPOLOGY) \
		CHAOS_DURATION=$(DURATION) CHAOS_LATE_DELIVERY=$(LATE_DELIVERY) CHAOS_LATE_MAX=$(LATE_MAX) CHAOS_STRICT_PERMITS=$(STRICT_PERMITS) \
		$(GO) test $(CHAOS_RACE) -count=1 -v -run 'TestChaos$$' -timeout 0 .
