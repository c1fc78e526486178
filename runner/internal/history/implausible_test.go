package history

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/google/go-cmp/cmp"
)

// A night whose summary holds a number no run measures is neither fetched
// into the history nor carried from the previous build's: it is missed,
// with the reason naming the build and the member.
func TestCommandRefusesImplausibleNights(t *testing.T) {
	t.Parallel()
	const rec, current = "r-mi355x", 5
	api := bkapitest.NewServer(t, "org", "pipe", token)
	jobID := func(b int) string { return fmt.Sprintf("job-%d", b) }
	prev := &baseline.File{Version: baseline.FileVersion, BuildNumber: current - 1, Recipes: map[string]baseline.FileRecipe{}}
	fr := baseline.FileRecipe{StepKey: contract.StepKey(rec), Asked: 4}
	for b := 1; b < current; b++ {
		sum := night(t, rec, 0.5)
		if b == 2 {
			sum = night(t, rec, 1.7e308)
		}
		api.AddArtifact(b, bkapitest.Artifact{JobID: jobID(b), Path: contract.SummaryPath(rec), Content: sum})
		if b < current-1 {
			fr.Nights = append([]baseline.FileNight{{BuildNumber: b, JobID: jobID(b), Summary: sum}}, fr.Nights...)
		}
		api.AddBuild(bkapitest.Build{Number: b, FinishedAt: time.Date(2026, 1, b, 4, 0, 0, 0, time.UTC), Jobs: []bkapitest.Job{
			{ID: fmt.Sprintf("history-%d", b), StepKey: contract.HistoryStepKey}, {ID: jobID(b), StepKey: contract.StepKey(rec)}}})
	}
	prev.Recipes[rec] = fr
	addHistory(t, api, current-1, prev)

	out := t.TempDir()
	env := apiEnv(api, current, contract.Need{Recipe: rec, Nights: 4})
	var stdout bytes.Buffer
	if err := runAgainstAPI(out, env, &stdout, &stdout); err != nil {
		t.Fatalf("Run() = %v\n%s", err, stdout.String())
	}
	if !strings.Contains(stdout.String(), "starting from build 4's history (2 nights") {
		t.Errorf("the log does not say it carried the 2 plausible nights:\n%s", stdout.String())
	}
	f, err := baseline.ReadFile(filepath.Join(out, "recipes", rec+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var builds []int
	for _, n := range f.Recipes[rec].Nights {
		builds = append(builds, n.BuildNumber)
	}
	if diff := cmp.Diff(builds, []int{4, 3, 1}); diff != "" {
		t.Errorf("nights (-got +want):\n%s", diff)
	}
	missed := f.Recipes[rec].Missed
	if len(missed) != 1 || missed[0].BuildNumber != 2 || missed[0].Reason != baseline.MissArtifactUnusable ||
		!strings.Contains(missed[0].Detail, "build 2's "+contract.SummaryPath(rec)+": accuracy[0].metrics.acc: 1.7e+308 is not a plausible measurement") {
		t.Errorf("missed = %+v, want build 2 unusable, naming the file and member", missed)
	}
}
