# benchkite: common tasks. `make test` is what CI runs.

GO        ?= go
AGENT_SRC := steps/testdata/buildkite-agent
AGENT_BIN := bin/buildkite-agent

.PHONY: all pipeline lint test vet fmt-check agent runner generator bench golden clean locks demo

all: generator runner

# Print the nightly pipeline for the built-in recipes, images as tags.
pipeline:
	$(GO) run ./generator --no-resolve

# Validate the recipes in this checkout.
lint:
	$(GO) run ./generator lint --workloads workloads --agents agents/profiles.yaml

generator:
	$(GO) build -o bin/generator ./generator

# The runner ships to GPU jobs as a static linux/amd64 artifact: the vLLM
# image has no Go and may have an older libc.
runner:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -o bin/runner ./runner

# The real buildkite-agent, from its own module so go.mod stays small; the
# tests pass every generated pipeline through its `pipeline upload --dry-run`.
agent: $(AGENT_BIN)
$(AGENT_BIN): $(AGENT_SRC)/go.mod $(AGENT_SRC)/main.go
	cd $(AGENT_SRC) && $(GO) build -o ../../../$(AGENT_BIN) .

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

test: agent fmt-check vet
	BUILDKITE_AGENT_BIN=$(CURDIR)/$(AGENT_BIN) $(GO) test -race -count=1 -timeout 60m ./...

# Rewrite the golden files (generated JSON, annotations, plans, SVGs) after
# an intended change; review the diff before committing.
# One -update flag (internal/testutil) serves every package whose tests
# import it; only those test binaries know the flag.
golden: agent
	BUILDKITE_AGENT_BIN=$(CURDIR)/$(AGENT_BIN) $(GO) test -count=1 \
	  $$($(GO) list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | grep ' .*internal/testutil' | cut -d' ' -f1) -update

# Run a shrunk copy of the seed recipe end to end on this machine: the
# stand-in vLLM server, the runner's real tools phase and the real lm_eval,
# three nights so the last draws a trend. Leaves results/minimax_m3-mi355x/.
demo:
	$(GO) run ./runner/internal/e2e/demo

# Regenerate the tool sets' lock files (internal/toollocks/*.txt) from
# their .in files: every dependency pinned with its hashes. Needs python3
# and PyPI; commit the .in and .txt files together, with `make golden`
# (plans name the venv by the lock's hash).
locks:
	internal/toollocks/compile.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin results .demo
