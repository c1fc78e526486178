package history

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

const token = "bk-test-token"

func night(t *testing.T, recipe string, score float64) []byte {
	t.Helper()
	return baselinetest.Encode(t, summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: recipe, GPU: "MI355X", NumGPUs: 8, Model: "m", Verdict: summary.VerdictPass,
		Phases: []summary.Phase{}, Bench: []summary.BenchRun{}, Gates: []summary.GateResult{},
		Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusOK, Metrics: map[string]float64{"acc": score}}}})
}

// The history step lists the builds once for every recipe, and what it
// writes, all recipes in one file and each in its own, is what FileSource
// gives the GPU jobs.
func TestCommandFetchesOnceAndFileSourceReadsIt(t *testing.T) {
	t.Parallel()
	api := bkapitest.NewServer(t, "org", "pipe", token)
	for _, b := range []int{11, 12} {
		api.AddBuild(bkapitest.Build{Number: b, FinishedAt: time.Date(2026, 2, b, 4, 0, 0, 0, time.UTC),
			Jobs: []bkapitest.Job{{ID: "job-a-" + string(rune('0'+b-10)), StepKey: contract.StepKey("a-h200")}, {ID: "job-b-" + string(rune('0'+b-10)), StepKey: contract.StepKey("b-mi355x")}}})
		api.AddArtifact(b, bkapitest.Artifact{JobID: "job-a-" + string(rune('0'+b-10)), Path: contract.SummaryPath("a-h200"), Content: night(t, "a-h200", float64(b)/100)})
	}
	api.AddArtifact(12, bkapitest.Artifact{JobID: "job-b-2", Path: contract.SummaryPath("b-mi355x"), Content: night(t, "b-mi355x", 0.5)})

	out := filepath.Join(t.TempDir(), "h")
	env := map[string]string{"BUILDKITE_API_TOKEN": token, "BENCHKITE_API_URL": api.URL, "BUILDKITE_ORGANIZATION_SLUG": api.Org, "BUILDKITE_PIPELINE_SLUG": api.Pipeline,
		"BUILDKITE_BUILD_NUMBER": "13", contract.HistoryEnv: contract.EncodeNeeds([]contract.Need{{Recipe: "a-h200", Nights: 5}, {Recipe: "b-mi355x", Nights: 1}, {Recipe: "c-b200", Nights: 2}})}
	var stdout, stderr bytes.Buffer
	err := Command(context.Background(), []string{"--out", out}, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, func(k string) string { return env[k] }, nil)
	if err != nil {
		t.Fatalf("Command() = %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if strings.Contains(stdout.String()+stderr.String(), token) {
		t.Errorf("the log shows the token")
	}
	lists := 0
	for _, r := range api.Requests() {
		if strings.HasSuffix(r.Path, "/builds") {
			lists++
		}
	}
	if lists != 1 {
		t.Errorf("build listings = %d, want one for the build", lists)
	}

	src := baseline.FileSource(filepath.Join(out, "baselines.json"))
	got := map[string][]int{}
	for _, recipe := range []string{"a-h200", "b-mi355x"} {
		r, err := src.Last(context.Background(), recipe, contract.StepKey(recipe), 5)
		if err != nil {
			t.Fatalf("FileSource.Last(%s) = %v", recipe, err)
		}
		for _, n := range r.Nights {
			s, err := summary.Read(bytes.NewReader(n.Summary))
			if err != nil {
				t.Fatalf("night %d of %s: %v", n.BuildNumber, recipe, err)
			}
			if s.Recipe != recipe {
				t.Errorf("night %d of %s holds %s's summary", n.BuildNumber, recipe, s.Recipe)
			}
			got[recipe] = append(got[recipe], n.BuildNumber)
		}
	}
	if diff := cmp.Diff(got, map[string][]int{"a-h200": {12, 11}, "b-mi355x": {12}}); diff != "" {
		t.Errorf("nights diff (-got +want):\n%s", diff)
	}
	// Each recipe's own file holds that recipe alone.
	for _, recipe := range []string{"a-h200", "b-mi355x", "c-b200"} {
		f, err := baseline.ReadFile(filepath.Join(out, "recipes", recipe+".json"))
		if err != nil {
			t.Fatalf("%s's file: %v", recipe, err)
		}
		if _, ok := f.Recipes[recipe]; !ok || len(f.Recipes) != 1 {
			t.Errorf("%s's file holds %d recipes, want %s alone", recipe, len(f.Recipes), recipe)
		}
	}
	if _, err := src.Last(context.Background(), "c-b200", contract.StepKey("c-b200"), 2); !errors.Is(err, baseline.ErrNoBaseline) || !strings.Contains(err.Error(), "c-b200") {
		t.Errorf("FileSource.Last(c-b200) = %v, want ErrNoBaseline naming the recipe", err)
	}
	if _, err := src.Last(context.Background(), "d-h200", contract.StepKey("d-h200"), 1); !errors.Is(err, baseline.ErrNoBaseline) || !strings.Contains(err.Error(), "not asked") {
		t.Errorf("FileSource.Last(d-h200) = %v, want ErrNoBaseline: not in the file", err)
	}
}

// Without a token the file is still written, with the reason for every
// recipe, and the step fails so that the missing token shows.
func TestCommandWithoutToken(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	env := map[string]string{contract.HistoryEnv: "a-h200\t3"}
	var stdout bytes.Buffer
	err := run(context.Background(), []string{"--out", out}, cliutil.Streams{Stdout: &stdout, Stderr: &stdout}, func(k string) string { return env[k] }, nil,
		func(context.Context) (baseline.Source, error) {
			return nil, errors.New("no API token: BUILDKITE_API_TOKEN is unset")
		})
	if err == nil || !strings.Contains(err.Error(), "no API token") {
		t.Fatalf("run() = %v, want the token error", err)
	}
	_, lerr := baseline.FileSource(filepath.Join(out, "baselines.json")).Last(context.Background(), "a-h200", contract.StepKey("a-h200"), 3)
	if !errors.Is(lerr, baseline.ErrNoBaseline) || !strings.Contains(lerr.Error(), "no API token") {
		t.Errorf("FileSource.Last() = %v, want ErrNoBaseline with the reason", lerr)
	}
}

func TestCommandBadNeeds(t *testing.T) {
	t.Parallel()
	var stdout bytes.Buffer
	err := Command(context.Background(), []string{"--out", filepath.Join(t.TempDir(), "x.json"), "--needs", "a-h200\tmany"}, cliutil.Streams{Stdout: &stdout, Stderr: &stdout}, func(string) string { return "" }, nil)
	if !errors.Is(err, cliutil.ErrUsage) || !strings.Contains(err.Error(), contract.HistoryEnv+" line 1") {
		t.Errorf("Command() = %v, want a usage error naming the line", err)
	}
}

// A file that cannot be read is no baseline, with the reason.
func TestFileSourceMissingFile(t *testing.T) {
	t.Parallel()
	_, err := baseline.FileSource(filepath.Join(t.TempDir(), "none.json")).Last(context.Background(), "a", contract.StepKey("a"), 1)
	if !errors.Is(err, baseline.ErrNoBaseline) || !strings.Contains(err.Error(), "read history") {
		t.Errorf("Last() = %v, want ErrNoBaseline: read history", err)
	}
}
