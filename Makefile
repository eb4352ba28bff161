# The README's commands. `make test` installs what the tests need first.
GO      ?= go
BIN     ?= bin
# A tagged checkout stamps its tag; otherwise the binaries fall back to the
# module version, then "dev" (internal/version).
VERSION ?= $(shell git describe --tags --exact-match 2>/dev/null)
LDFLAGS := $(if $(VERSION),-X alpnib.dev/internal/version.Version=$(VERSION))
export PATH := $(PATH):$(shell $(GO) env GOPATH)/bin
SHELL := /bin/bash
# Tests, the demo and benchmarks run in a network namespace with only
# loopback (scripts/netguard.sh): nothing they start can send a packet off
# this machine. What must download runs before, in setup / prefetch.
GUARD   := scripts/netguard.sh

.PHONY: all build test setup check demo bench clean

all: build

build:
	@mkdir -p $(BIN)
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/alp ./cmd/nibrunnerd
	# Every byte of the init stays in each guest's RAM (the initramfs): no
	# symbol table or DWARF (-s -w; Go's stack traces do not need them).
	CGO_ENABLED=0 $(GO) build -ldflags '-s -w $(LDFLAGS)' -o $(BIN)/nibrun-init ./cmd/nibrun-init

# setup installs host tools (Debian packages) and Go tools the tests use, only
# when they are missing, then downloads the Go modules and the guest kernel
# package (scripts/prefetch.sh) so that nothing downloads under the guard.
setup:
	@scripts/setup.sh

# check runs the static checks: formatting, vet, staticcheck.
check:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	staticcheck ./...

# The Candid conformance runner prints one "<file>: N passed, M failed" line
# per suite file, the registry one "registry vectors: N passed, M failed";
# show those lines, then run everything.
test: setup check
	@set -o pipefail; $(GUARD) $(GO) test -count=1 -v -run '^TestTheOfficialCandidSuitePasses$$' ./ic/candid/idl | grep -E ' passed, | failed|^(ok|FAIL|---)'
	@set -o pipefail; $(GUARD) $(GO) test -count=1 -v -run '^TestEveryRegistryVectorDecodesToItsExpectedValues$$' ./ic/nns | grep -E ' passed, | failed|^(ok|FAIL|---)'
	$(GUARD) $(GO) test -race -timeout 45m ./...

# demo sets itself up first with the step `make test` runs (as root it
# installs what is missing; otherwise it says what to install, and the demo
# runs what it can and says what it skipped).
demo: build
	@scripts/setup.sh --for-demo
	@$(GUARD) scripts/demo.sh $(BIN)

bench:
	@scripts/setup.sh --for-bench
	$(GUARD) $(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN)
