# benchkite: common tasks. `make test` is what CI runs.

GO        ?= go
AGENT_SRC := steps/testdata/buildkite-agent
AGENT_BIN := bin/buildkite-agent
# The packages `make test` tests; .ci/stock-agent narrows it.
PKGS      ?= ./...
# The stand-in programs (vllm, lm_eval, docker, ...) are a module of their
# own, so the product's go.mod holds only what the shipped programs and
# their tests need. Their packages are tested with the whole suite only.
STANDINS      := runner/standins
STANDINS_PKGS ?= $(if $(filter ./...,$(PKGS)),./...)

.PHONY: all pipeline lint test vet fmt-check agent runner generator bench golden screenshots clean vllm-flags locks demo drill gpu-selftest

all: generator runner

# Print the nightly pipeline for the built-in recipes, images as tags.
pipeline:
	$(GO) run ./generator --no-resolve

# Validate the recipes in this checkout.
lint:
	$(GO) run ./generator lint --workloads workloads --agents agents/profiles.yaml

# Built as the runner is (static, -trimpath), so that on a fresh CPU agent
# the standard library is compiled once for both.
generator:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/generator ./generator

# Regenerate the table of `vllm serve` flags lint checks serve_args against,
# from the Python source in vLLM's wheel (nothing is imported or built),
# and the stand-in vllm's copy of it.
VLLM_VERSION ?= 0.33.0
vllm-flags:
	d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	pip download --quiet --no-deps --only-binary :all: --python-version 3.12 \
	  --platform manylinux_2_28_x86_64 vllm==$(VLLM_VERSION) -d "$$d" && \
	python3 -c 'import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); z.extractall(sys.argv[2], [n for n in z.namelist() if n.endswith(".py")])' "$$d"/vllm-*.whl "$$d/src" && \
	python3 workloads/vllmflags/gen_serve_flags.py "$$d/src" > "$$d/flags" && \
	cp "$$d/flags" $(STANDINS)/cmd/vllm/serve_flags.txt && \
	mv "$$d/flags" workloads/vllm_serve_flags.txt

# The runner ships to GPU jobs as a static linux/amd64 artifact: the vLLM
# image has no Go and may have an older libc.
runner:
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 $(GO) build -trimpath -o bin/runner ./runner

# The real buildkite-agent, from its own module so go.mod stays small; the
# tests pass every generated pipeline through its `pipeline upload --dry-run`.
# Built once per version (and source) into AGENT_CACHE, so a fresh clone on
# a machine that built it before copies it instead of compiling the agent.
# Each build goes to its own temporary name beside the cache entry and is
# published by rename, so builds that share a cache (a PR build and a
# nightly on agents sharing a home) never see each other's half-written
# file: the last rename wins, and either is a whole binary of that source.
AGENT_KEY   := $(shell cat $(AGENT_SRC)/go.mod $(AGENT_SRC)/go.sum $(AGENT_SRC)/main.go | sha256sum | cut -c1-16)
AGENT_VER   := $(shell awk '$$1 == "github.com/buildkite/agent/v3" {print $$2}' $(AGENT_SRC)/go.mod)
AGENT_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/benchkite/buildkite-agent-$(AGENT_VER)-$(AGENT_KEY)
agent: $(AGENT_BIN)
$(AGENT_BIN): $(AGENT_SRC)/go.mod $(AGENT_SRC)/go.sum $(AGENT_SRC)/main.go
	@mkdir -p bin $(dir $(AGENT_CACHE))
	@if [ ! -x $(AGENT_CACHE) ]; then \
	  echo "building buildkite-agent $(AGENT_VER) into $(AGENT_CACHE)"; \
	  tmp=$$(mktemp -d "$(AGENT_CACHE).build.XXXXXX") && trap 'rm -rf "$$tmp"' EXIT && \
	  (cd $(AGENT_SRC) && $(GO) build -o "$$tmp/buildkite-agent" .) && \
	  mv -f "$$tmp/buildkite-agent" $(AGENT_CACHE); \
	fi
	@tmp=$$(mktemp -p bin .buildkite-agent.XXXXXX) && trap 'rm -f "$$tmp"' EXIT && \
	  cp $(AGENT_CACHE) "$$tmp" && chmod 755 "$$tmp" && mv -f "$$tmp" $(AGENT_BIN)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...
	cd $(STANDINS) && $(GO) vet ./...

test: agent fmt-check vet
	BUILDKITE_AGENT_BIN=$(CURDIR)/$(AGENT_BIN) $(GO) test -race -count=1 -timeout 60m $(PKGS)
	$(if $(STANDINS_PKGS),cd $(STANDINS) && BUILDKITE_AGENT_BIN=$(CURDIR)/$(AGENT_BIN) $(GO) test -race -count=1 -timeout 60m $(STANDINS_PKGS))

# Rewrite the golden files (generated JSON, annotations, plans, SVGs) after
# an intended change; review the diff before committing.
# One -update flag (internal/testutil) serves every package whose tests
# import it; only those test binaries know the flag.
golden: agent
	BUILDKITE_AGENT_BIN=$(CURDIR)/$(AGENT_BIN) $(GO) test -count=1 \
	  $$($(GO) list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... | grep ' .*internal/testutil' | cut -d' ' -f1) -update

# The pictures: the golden annotations and build report rendered as
# CommonMark with HTML (as Buildkite renders them), the golden trend page
# and the drill's report, in headless Chromium (apt package chromium).
# They go to results/screenshots; SCREENSHOTS_OUT=docs/screenshots
# redraws the README's. The drill's come from DRILL_OUT when `make drill`
# wrote there, else from docs/drill. Run `make golden` first when the
# goldens changed.
SCREENSHOTS_OUT ?= results/screenshots
DRILL_OUT       ?= results/drill
screenshots:
	cd tools/screenshots && $(GO) run . -root ../.. -out $(SCREENSHOTS_OUT) \
	  -drill $(if $(wildcard $(DRILL_OUT)/report.md),$(DRILL_OUT),docs/drill)

# Run a shrunk copy of the seed recipe (or RECIPE=workloads/<file>.yaml)
# end to end on this machine: the stand-in vLLM server, the runner's real
# tools phase and the real lm_eval, three nights so the last draws a
# trend, then `runner report` for the build report and the trend page.
# Leaves results/<recipe>/, results/_history/ and results/_report/.
# DEMO_BFCL=1 adds two BFCL categories run by the real bfcl_eval (its venv
# is installed on first use), whose score files land in bfcl/ there.
demo:
	$(GO) run ./runner/internal/e2e/demo $(if $(DEMO_BFCL),-bfcl) $(if $(RECIPE),-recipe $(RECIPE))

# A red night on the stand-ins (TestDrill): an infra loss, a vLLM OOM and a
# throughput regression, classed, GPU time totalled, the regression bisected
# to the scripted commit. Keeps the build report and the bisect annotation
# in DRILL_OUT (results/drill; DRILL_OUT=docs/drill refreshes the README's)
# for `make screenshots`.
drill:
	$(GO) test ./runner/internal/e2e -run '^TestDrill$$' -count=1 -v -args -drill-out=$(DRILL_OUT)

# Regenerate the tool sets' lock files (internal/toollocks/*.txt) from
# their .in files: every dependency pinned with its hashes. Needs python3
# and PyPI; commit the .in and .txt files together, with `make golden`
# (plans name the venv by the lock's hash).
locks:
	internal/toollocks/compile.sh

# The GPU self-test (tools/gpu-selftest/selftest.py): on a machine with one
# GPU, vLLM and lm_eval (on PATH) and no network, the runner's night on a
# plain and a speculative recipe, the bench driver against the CLI, and five
# faults, in one table; non-zero on any harness defect. SELFTEST_ARGS adds
# flags (--work, --out, --only, --python).
gpu-selftest: runner
	cd $(STANDINS) && CGO_ENABLED=0 $(GO) build -trimpath -o $(CURDIR)/bin/hfhub ./cmd/hfhub
	python3 tools/gpu-selftest/selftest.py --runner bin/runner --hub bin/hfhub $(SELFTEST_ARGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin results .demo
