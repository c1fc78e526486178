package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
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
// gives the GPU jobs, failed nights marked as such.
func TestCommandFetchesOnceAndFileSourceReadsIt(t *testing.T) {
	t.Parallel()
	api := bkapitest.NewServer(t, "org", "pipe", token)
	for _, b := range []int{11, 12} {
		api.AddBuild(bkapitest.Build{Number: b, FinishedAt: time.Date(2026, 2, b, 4, 0, 0, 0, time.UTC),
			Jobs: []bkapitest.Job{{ID: "job-a-" + string(rune('0'+b-10)), StepKey: contract.StepKey("a-h200")}, {ID: "job-b-" + string(rune('0'+b-10)), StepKey: contract.StepKey("b-mi355x")}}})
		api.AddArtifact(b, bkapitest.Artifact{JobID: "job-a-" + string(rune('0'+b-10)), Path: contract.SummaryPath("a-h200"), Content: night(t, "a-h200", float64(b)/100)})
	}
	api.AddArtifact(12, bkapitest.Artifact{JobID: "job-b-2", Path: contract.SummaryPath("b-mi355x"), Content: night(t, "b-mi355x", 0.5)})
	api.AddBuild(bkapitest.Build{Number: 10, FinishedAt: time.Date(2026, 2, 10, 4, 0, 0, 0, time.UTC),
		Jobs: []bkapitest.Job{{ID: "job-a-0", StepKey: contract.StepKey("a-h200"), State: "failed"}}})
	api.AddArtifact(10, bkapitest.Artifact{JobID: "job-a-0", Path: contract.SummaryPath("a-h200"), Content: night(t, "a-h200", 0.1)})

	out := filepath.Join(t.TempDir(), "h")
	env := apiEnv(api, 13, contract.Need{Recipe: "a-h200", Nights: 5}, contract.Need{Recipe: "b-mi355x", Nights: 1}, contract.Need{Recipe: "c-b200", Nights: 2})
	var stdout, stderr bytes.Buffer
	err := runAgainstAPI(out, env, &stdout, &stderr)
	if err != nil {
		t.Fatalf("Run() = %v\n%s%s", err, stdout.String(), stderr.String())
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
	var failed []int
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
			if n.Failed {
				failed = append(failed, n.BuildNumber)
			}
		}
	}
	if diff := cmp.Diff(got, map[string][]int{"a-h200": {12, 11, 10}, "b-mi355x": {12}}); diff != "" {
		t.Errorf("nights diff (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(failed, []int{10}); diff != "" {
		t.Errorf("failed nights diff (-got +want):\n%s", diff)
	}
	if want := "a-h200: 3 of 5 night(s) #12 #11 #10 (failed), 1 failed"; !strings.Contains(stdout.String(), want) {
		t.Errorf("the log does not say %q:\n%s", want, stdout.String())
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
	err := run(context.Background(), apiConfig(out, env), cliutil.Streams{Stdout: &stdout, Stderr: &stdout}, func(k string) string { return env[k] }, buildkite.Door{Getenv: func(k string) string { return env[k] }},
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

func TestRunBadNeeds(t *testing.T) {
	t.Parallel()
	var stdout bytes.Buffer
	err := Run(context.Background(), Config{Out: filepath.Join(t.TempDir(), "x.json"), Needs: "a-h200\tmany"}, cliutil.Streams{Stdout: &stdout, Stderr: &stdout}, func(string) string { return "" }, buildkite.Door{})
	if !errors.Is(err, cliutil.ErrUsage) || !strings.Contains(err.Error(), contract.HistoryEnv+" line 1") {
		t.Errorf("Run() = %v, want a usage error naming the line", err)
	}
}

// An API that cannot be used fails the step whatever the reason, and the
// message names the reason: no token, unreachable, refused, not found. A
// recipe that has no nights yet fails nothing.
func TestRunAPIFailuresFail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		srcErr error // from making the source
		getErr error // from every fetch
		want   string
	}{
		{name: "no token", srcErr: fmt.Errorf("%w: BUILDKITE_API_TOKEN is not set", bkapi.ErrNoToken), want: "has no token"},
		{name: "unreachable", getErr: fmt.Errorf("%w: %w: dial tcp: connection refused", baseline.ErrNoBaseline, bkapi.ErrUnavailable), want: "could not be reached (unreachable) for 2 of 2 recipe(s)"},
		{name: "unauthorised", getErr: fmt.Errorf("%w: %w", baseline.ErrNoBaseline, bkapi.ErrUnauthorized), want: "refused the token (unauthorised)"},
		{name: "not found", getErr: fmt.Errorf("%w: %w", baseline.ErrNoBaseline, bkapi.ErrNotFound), want: "(not found)"},
		{name: "no nights yet", getErr: fmt.Errorf("%w: no passing night among 0 builds", baseline.ErrNoBaseline)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "baselines.json")
			var stdout bytes.Buffer
			err := run(context.Background(), Config{Out: out, Needs: "a-h200\t3\nb-h200\t3"}, cliutil.Streams{Stdout: &stdout, Stderr: &stdout}, func(string) string { return "" }, buildkite.Door{},
				func(context.Context) (baseline.Source, error) {
					if tt.srcErr != nil {
						return nil, tt.srcErr
					}
					return failingSource{tt.getErr}, nil
				})
			if tt.want == "" {
				if err != nil {
					t.Errorf("run() = %v, want nil", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("run() = %v, want an error containing %q", err, tt.want)
			}
			if _, serr := os.Stat(out); serr != nil {
				t.Errorf("no history file written: %v", serr)
			}
		})
	}
}

type failingSource struct{ err error }

func (s failingSource) Last(context.Context, string, string, int) (baseline.Result, error) {
	return baseline.Result{}, s.err
}

// apiEnv is the environment of build's history step against the stand-in
// API, asked for needs.
func apiEnv(api *bkapitest.Server, build int, needs ...contract.Need) map[string]string {
	return map[string]string{"BUILDKITE_API_TOKEN": token, "BENCHKITE_API_URL": api.URL, "BUILDKITE_ORGANIZATION_SLUG": api.Org, "BUILDKITE_PIPELINE_SLUG": api.Pipeline,
		"BUILDKITE_BUILD_NUMBER": fmt.Sprint(build), contract.HistoryEnv: contract.EncodeNeeds(needs)}
}

// addHistory uploads f as the history artifact of build's history step
// (job history-<build>).
func addHistory(t *testing.T, api *bkapitest.Server, build int, f *baseline.File) {
	t.Helper()
	dir := t.TempDir()
	if err := f.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	all, err := os.ReadFile(filepath.Join(dir, "baselines.json"))
	if err != nil {
		t.Fatal(err)
	}
	api.AddArtifact(build, bkapitest.Artifact{JobID: fmt.Sprintf("history-%d", build), Path: contract.HistoryArtifact, Content: all})
}

// runAgainstAPI runs the history step against the stand-in API env
// names (apiConfig), writing to out, with env as its environment.
func runAgainstAPI(out string, env map[string]string, stdout, stderr io.Writer) error {
	getenv := func(k string) string { return env[k] }
	return Run(context.Background(), apiConfig(out, env), cliutil.Streams{Stdout: stdout, Stderr: stderr}, getenv, buildkite.Door{Getenv: getenv})
}

// apiConfig is the history step's configuration for a stand-in API whose
// address and needs env holds.
func apiConfig(out string, env map[string]string) Config {
	return Config{Out: out, Needs: env[contract.HistoryEnv],
		API: baseline.APIConfig{URL: env["BENCHKITE_API_URL"], TokenEnv: "BUILDKITE_API_TOKEN", TokenSecret: "BENCHKITE_API_TOKEN"}}
}

// A file that cannot be read is no baseline, with the reason.
func TestFileSourceMissingFile(t *testing.T) {
	t.Parallel()
	_, err := baseline.FileSource(filepath.Join(t.TempDir(), "none.json")).Last(context.Background(), "a", contract.StepKey("a"), 1)
	if !errors.Is(err, baseline.ErrNoBaseline) || !strings.Contains(err.Error(), "read history") {
		t.Errorf("Last() = %v, want ErrNoBaseline: read history", err)
	}
}
