# The README's two commands are `make up` and `make test`.
GO ?= go
# Packages with concurrency at their heart run under the race detector too.
RACE_PKGS = ./internal/storage/... ./internal/cache/... ./internal/apiserver/... \
	./internal/scheduler/... ./internal/controllers/... ./internal/sim/... ./internal/bench/loadtest/...

.PHONY: build up test test-unit test-race test-e2e check
build:
	$(GO) build -o bin/myriad ./cmd/myriad

up: build
	./bin/myriad up --data-dir .myriad

test: check test-unit test-race

# Every package is tested once: the concurrent ones under the race detector
# (test-race), the rest here.
test-unit:
	race="$$($(GO) list $(RACE_PKGS))" && \
	$(GO) test -count=1 -timeout 20m $$($(GO) list ./... | grep -vxF "$$race")

test-race:
	$(GO) test -count=1 -race -timeout 20m $(RACE_PKGS)

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
