# Developer and CI entry points. CI runs .ci/run, which runs "make test".

GO ?= go

# Every Go module in the repository (directories holding a go.mod).
MODULES = $(shell find . -name go.mod -not -path "./.git/*" -not -path "*/testdata/*" -not -path "*/vendor/*" -exec dirname {} \; | LC_ALL=C sort)

.PHONY: test vet fmt demo bench

# Install redis-server if missing, check gofmt, then go vet and
# go test -race in every module. See scripts/test.sh.
test:
	bash scripts/test.sh

# go vet in every module.
vet:
	@set -e; for m in $(MODULES); do echo "==> go vet in $$m"; (cd $$m && $(GO) vet ./...); done

# gofmt every .go file in place, listing the ones it changed.
fmt:
	@find . -name "*.go" -not -path "./.git/*" -print0 | xargs -0 -r gofmt -l -w

# Run the demo against a local Redis.
demo:
	$(GO) run ./cmd/redisync demo

# Run the benchmarks (the bench module); BENCHFLAGS="--redis host:port" uses an existing server.
bench:
	cd bench && $(GO) run . $(BENCHFLAGS)
