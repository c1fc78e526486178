package report

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

// reportResults holds one summary per recipe of a made-up build: a pass, a
// regression, an error, a truncated file and one from a newer schema.
const reportResults = "testdata/report/results"

const reportSkipped = "minimax_m3-nospec-mi355x\tblocked by vllm-project/vllm#45381\n\n  gpt_oss_120b-b200  \tno | B200 agents\nbare-name\n"

func TestRenderReportGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		dir      string
		skipped  string
		buildURL string
	}{
		{"report", reportResults, reportSkipped, "https://buildkite.com/benchkite/nightly/builds/812"},
		{"no_build_url", reportResults, "", ""},
		{"no_results", "testdata/report/missing", reportSkipped, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sums, problems := readSummaries(tt.dir)
			got := renderReport(sums, sameBuildComparisons(sums, tt.dir), problems, contract.ParseSkipped(tt.skipped), tt.buildURL)
			testutil.CheckMarkdownTables(t, got)
			testutil.Golden(t, "testdata/report/"+tt.name+".md", []byte(got))
		})
	}
}

func TestReadSummaries(t *testing.T) {
	t.Parallel()
	sums, problems := readSummaries(reportResults)
	var names []string
	for _, s := range sums {
		names = append(names, s.Recipe+"="+s.Verdict)
	}
	if diff := cmp.Diff(names, []string{"gpt_oss_120b-h200=pass", "kimi_k2_5-mi300x=error", "minimax_m3-mi355x=fail"}); diff != "" {
		t.Errorf("summaries read diff (-got +want):\n%s", diff)
	}
	if len(problems) != 2 || !strings.Contains(problems[0], "broken/summary.json") || !strings.Contains(problems[1], "future/summary.json") ||
		!strings.Contains(problems[1], summary.ErrUnsupportedSchema.Error()) {
		t.Errorf("problems = %q, want the truncated and the newer summary named", problems)
	}
}

func TestReportStyle(t *testing.T) {
	t.Parallel()
	sum := func(verdicts ...string) []summary.Summary {
		var out []summary.Summary
		for _, v := range verdicts {
			out = append(out, summary.Summary{Verdict: v})
		}
		return out
	}
	tests := []struct {
		sums []summary.Summary
		want string
	}{
		{nil, "warning"},
		{sum("pass", "pass"), "success"},
		{sum("pass", "error"), "warning"},
		{sum("error", "fail", "pass"), "error"},
	}
	for _, tt := range tests {
		if got := reportStyle(tt.sums, sameBuildComparisons(tt.sums, "")); got != tt.want {
			t.Errorf("reportStyle(%v) = %q, want %q", tt.sums, got, tt.want)
		}
	}
}

// resultsWith copies the named recipes' summaries from reportResults into
// a fresh results directory.
func resultsWith(t *testing.T, recipes ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, r := range recipes {
		data, err := os.ReadFile(filepath.Join(reportResults, r, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dir, r), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, r, "summary.json"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestRunReportExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		recipes  []string
		missing  bool // the results directory does not exist
		viaEnv   bool // BENCHKITE_RESULTS instead of --results
		wantCode int
		want     []string
	}{
		{name: "pass and error", recipes: []string{"gpt_oss_120b-h200", "kimi_k2_5-mi300x"}, wantCode: 0,
			want: []string{"### benchkite: 1 passed, 0 regressed, 1 could not be judged"}},
		{name: "a regression fails the step", recipes: []string{"gpt_oss_120b-h200", "minimax_m3-mi355x", "kimi_k2_5-mi300x"}, wantCode: 1,
			want: []string{"1 regressed", "+++ :x: 1 recipe(s) regressed\n"}},
		{name: "results directory from the environment", recipes: []string{"minimax_m3-mi355x"}, viaEnv: true, wantCode: 1,
			want: []string{"+++ :x: 1 recipe(s) regressed\n"}},
		{name: "unreadable summaries do not fail the step", recipes: []string{"broken", "future"}, wantCode: 0,
			want: []string{"Results that could not be read:", "broken/summary.json"}},
		{name: "no results at all", missing: true, wantCode: 0,
			want: []string{"### benchkite: 0 passed, 0 regressed, 0 could not be judged", "- no results directory "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := resultsWith(t, tt.recipes...)
			if tt.missing {
				dir = filepath.Join(dir, "none")
			}
			env := map[string]string{"BUILDKITE_BUILD_URL": "https://buildkite.com/benchkite/nightly/builds/812"}
			args := []string{"report", "--download=false"}
			if tt.viaEnv {
				env["BENCHKITE_RESULTS"] = dir
			} else {
				args = append(args, "--results", dir)
			}
			var stdout, stderr strings.Builder
			code := cliutil.ExitCode(Command(context.Background(), args[1:], cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(env), nil), "runner report", &stderr)
			if code != tt.wantCode {
				t.Errorf("report exit = %d, want %d; stdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			if strings.Contains(stdout.String(), "buildkite-agent") {
				t.Errorf("report ran buildkite-agent outside a Buildkite job:\n%s", stdout.String())
			}
		})
	}
}

func TestRunReportUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"report", "extra"}, {"report", "--download=maybe"}, {"report", "--no-such-flag"}} {
		var stdout, stderr strings.Builder
		if code := cliutil.ExitCode(Command(context.Background(), args[1:], cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(nil), nil), "runner report", &stderr); code != 2 {
			t.Errorf("run(%q) = %d, want 2; stderr:\n%s", args, code, stderr.String())
		}
	}
}

func mapGetenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// A failed phase's cause reaches the build report's row, in the
// process's own words.
func TestReportShowsCause(t *testing.T) {
	t.Parallel()
	s := summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: "r-mi355x", GPU: "MI355X", NumGPUs: 8, Verdict: summary.VerdictError,
		Phases: []summary.Phase{{Name: summary.PhaseReady, Status: summary.StatusFailed, Error: "server exited before it was ready: vllm exited with code 1",
			Cause: "torch.OutOfMemoryError: HIP out of memory"}}}
	body := renderReport([]summary.Summary{s}, nil, nil, nil, "")
	if !strings.Contains(body, "ready failed: torch.OutOfMemoryError: HIP out of memory") {
		t.Errorf("the report does not show the cause:\n%s", body)
	}
}
