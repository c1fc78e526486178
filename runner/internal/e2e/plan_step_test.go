package e2e

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/shell"
)

// TestE2EPlanListsWhatTheGeneratedStepStarts runs the runner as every
// generated GPU step does (--history-step) with the dashboard sink on
// and its token in the agent's secrets. The history step has finished
// without a file for the recipe or its baseline_from twin, so the gates
// download, look at the step's state and download again; publishing
// reads the ingest token's secret. Every process the run starts is one
// `runner plan` lists for the same flags, first started in the plan's
// order.
func TestE2EPlanListsWhatTheGeneratedStepStarts(t *testing.T) {
	t.Parallel()
	const ingestToken = "ingest-secret-value"
	var mu sync.Mutex
	var auth []string
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(sink.Close)

	e := newE2E(t, seedName, smallSeedRecipe(t))
	e.setenv("FAKE_VLLM_ACCURACY", "0.9", "FAKE_LMEVAL_DOCS", "50")
	steps, states := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(steps, contract.HistoryStepKey), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(states, contract.HistoryStepKey), []byte("finished\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.setenv("FAKE_AGENT_DOWNLOADS", steps, "FAKE_AGENT_STEP_STATES", states)
	e.secrets(map[string]string{"BENCHKITE_INGEST_TOKEN": ingestToken})
	read := e.execLog()

	args := []string{"--health-timeout", "5m", "--history-step", contract.HistoryStepKey, "--ingest-url", sink.URL}
	// Without past nights the run is unverified: its exit says nothing
	// here, what it started does.
	e.run(args...)
	// The style is chosen after the run; the plan lists the choice.
	style := regexp.MustCompile(`--style [a-z]+( |$)`)
	var started []string
	for _, en := range read() {
		started = append(started, style.ReplaceAllString(shell.Join(en.Argv), "--style 'success|warning|error'$1"))
	}
	for _, want := range []string{"buildkite-agent artifact download ", "buildkite-agent step get state ", "buildkite-agent secret get "} {
		if !slices.ContainsFunc(started, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("the run started no %q; the test no longer takes that path. Started:\n%s", want, strings.Join(started, "\n"))
		}
	}
	mu.Lock()
	if want := []string{"Bearer " + ingestToken}; !slices.Equal(auth, want) {
		t.Errorf("the sink got Authorization %q, want %q", auth, want)
	}
	mu.Unlock()

	planned := planArgvs(e.plan(args...))
	last := -1
	seen := map[string]bool{}
	for _, s := range started {
		i := slices.Index(planned, s)
		switch {
		case i < 0:
			t.Errorf("the run started a process the plan does not list:\n  %s\nplanned:\n  %s", s, strings.Join(planned, "\n  "))
		case !seen[s] && i < last:
			t.Errorf("the run first started %q after %q, the plan lists it before", s, planned[last])
		case !seen[s]:
			last = i
		}
		seen[s] = true
	}
}
