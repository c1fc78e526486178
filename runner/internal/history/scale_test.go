package history

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
)

// scaleEnv turns the scale test on; it takes minutes because the API
// stand-in enforces Buildkite's 200 requests a minute.
const scaleEnv = "BENCHKITE_SCALE_TEST"

// The history of 200 recipes × 30 nights, when the previous build's
// history exists, in at most 500 API calls and 3 minutes, against the
// stand-in API with Buildkite's rate limit. It prints both numbers.
func TestHistoryAtScale(t *testing.T) {
	if os.Getenv(scaleEnv) != "1" {
		t.Skipf("SKIPPED: set %s=1 to run the history scale test (about 2 minutes: the API stand-in allows 200 calls a minute); .ci/run does", scaleEnv)
	}
	const recipes, nights, current = 200, 30, 32
	api := bkapitest.NewServer(t, "org", "pipe", token)
	name := func(i int) string { return fmt.Sprintf("r%03d-h200", i) }
	jobID := func(b, i int) string { return fmt.Sprintf("job-%d-%d", b, i) }
	prev := &baseline.File{Version: baseline.FileVersion, BuildNumber: current - 1, Recipes: map[string]baseline.FileRecipe{}}
	var needs []contract.Need
	for i := range recipes {
		needs = append(needs, contract.Need{Recipe: name(i), Nights: nights})
	}
	// Builds 1..31 finished; build 31's history step ran while its GPU
	// jobs did, so its history holds builds 1..30: tonight adds build 31.
	for b := 1; b < current; b++ {
		jobs := []bkapitest.Job{{ID: fmt.Sprintf("history-%d", b), StepKey: contract.HistoryStepKey}}
		for i := range recipes {
			jobs = append(jobs, bkapitest.Job{ID: jobID(b, i), StepKey: contract.StepKey(name(i))})
			sum := night(t, name(i), float64(b)/100)
			api.AddArtifact(b, bkapitest.Artifact{JobID: jobID(b, i), Path: contract.SummaryPath(name(i)), Content: sum})
			if b < current-1 {
				fr := prev.Recipes[name(i)]
				fr.StepKey, fr.Asked = contract.StepKey(name(i)), nights
				fr.Nights = append([]baseline.FileNight{{BuildNumber: b, JobID: jobID(b, i), Summary: sum}}, fr.Nights...)
				prev.Recipes[name(i)] = fr
			}
		}
		api.AddBuild(bkapitest.Build{Number: b, FinishedAt: time.Date(2026, 1, b, 4, 0, 0, 0, time.UTC), Jobs: jobs})
	}
	addHistory(t, api, current-1, prev)

	out := t.TempDir()
	env := apiEnv(api, current, needs...)
	var stdout bytes.Buffer
	start := time.Now()
	if err := runAgainstAPI(out, env, &stdout, &stdout); err != nil {
		t.Fatalf("Run() = %v\n%s", err, stdout.String())
	}
	took := time.Since(start)
	calls := 0
	for _, r := range api.Requests() {
		if !r.Storage {
			calls++
		}
	}
	t.Logf("history of %d recipes × %d nights, previous build's history present: %d API calls (%d refused with 429), %s",
		recipes, nights, calls, api.Limited(), took.Round(time.Second))
	if calls > 500 {
		t.Errorf("%d API calls, want at most 500", calls)
	}
	if took > 3*time.Minute {
		t.Errorf("took %s, want at most 3m", took)
	}
	if !strings.Contains(stdout.String(), "starting from build 31's history") {
		t.Errorf("the log does not say it started from build 31's history:\n%s", stdout.String())
	}
	for _, i := range []int{0, recipes - 1} {
		r, err := baseline.FileSource(filepath.Join(out, "recipes", name(i)+".json")).Last(context.Background(), name(i), contract.StepKey(name(i)), nights)
		if err != nil || len(r.Nights) != nights || r.Nights[0].BuildNumber != current-1 || r.Nights[nights-1].BuildNumber != 2 {
			t.Errorf("%s: %d nights (newest %v), err %v; want %d, builds 31 down to 2", name(i), len(r.Nights), r.Nights[0].BuildNumber, err, nights)
		}
	}
}
