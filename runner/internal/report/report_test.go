package report

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
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
			got := renderSums(sums, sameBuildComparisons(sums, tt.dir), problems, contract.ParseSkipped(tt.skipped), tt.buildURL)
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

// A results directory an earlier run was moved aside to is not a recipe:
// one recipe run three times on one machine is one recipe in the report.
func TestReadSummariesSkipsSetAside(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join(reportResults, "gpt_oss_120b-h200", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	recipe := filepath.Join(dir, "gpt_oss_120b-h200")
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	for _, d := range []string{recipe, summary.SetAsideName(recipe, at), summary.SetAsideName(recipe, at.Add(time.Hour))} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "summary.json"), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sums, problems := readSummaries(dir)
	var names []string
	for _, s := range sums {
		names = append(names, s.Recipe)
	}
	if diff := cmp.Diff(names, []string{"gpt_oss_120b-h200"}); diff != "" || len(problems) > 0 {
		t.Errorf("readSummaries() recipes diff (-got +want):\n%s\nproblems: %q", diff, problems)
	}
	got := renderSums(sums, sameBuildComparisons(sums, dir), problems, contract.ParseSkipped(""), "")
	if !strings.Contains(got, "of 1 recipe(s)") {
		t.Errorf("report headline counts more than the one recipe:\n%s", got)
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
		if got := styleOf(tt.sums, sameBuildComparisons(tt.sums, "")); got != tt.want {
			t.Errorf("styleOf(%v) = %q, want %q", tt.sums, got, tt.want)
		}
	}
}

// resultsWith copies the named recipes' summaries from reportResults into
// a fresh results directory.
func resultsWith(t *testing.T, recipes ...string) string {
	t.Helper()
	dir := t.TempDir()
	copySummaries(t, dir, recipes...)
	return dir
}

// copySummaries copies the named recipes' summaries from reportResults
// into the results directory dir.
func copySummaries(t *testing.T, dir string, recipes ...string) {
	t.Helper()
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
}

func TestRunReportExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		recipes  []string
		missing  bool // the results directory does not exist
		wantCode int
		want     []string
	}{
		{name: "pass and error", recipes: []string{"gpt_oss_120b-h200", "kimi_k2_5-mi300x"}, wantCode: 0,
			want: []string{"### benchkite: 1 could not be judged, 1 passed of 2 recipe(s)"}},
		{name: "a regression fails the step", recipes: []string{"gpt_oss_120b-h200", "minimax_m3-mi355x", "kimi_k2_5-mi300x"}, wantCode: 1,
			want: []string{"1 failed", "+++ :x: 1 recipe(s) failed a gate\n"}},
		{name: "unreadable summaries do not fail the step", recipes: []string{"broken", "future"}, wantCode: 0,
			want: []string{"Results that could not be read:", "broken/summary.json"}},
		{name: "no results at all", missing: true, wantCode: 0,
			want: []string{"### benchkite: no results of 0 recipe(s)", "- no results directory "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := resultsWith(t, tt.recipes...)
			if tt.missing {
				dir = filepath.Join(dir, "none")
			}
			env := map[string]string{"BUILDKITE_BUILD_URL": "https://buildkite.com/benchkite/nightly/builds/812"}
			var stdout, stderr strings.Builder
			code := cliutil.ExitCode(runReport(context.Background(), Config{Results: dir}, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(env), nil), "runner report", &stderr)
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

func mapGetenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// runReport is Run as the CLI calls it: the process's environment, read
// through getenv, for the agent and the API too.
func runReport(ctx context.Context, c Config, io cliutil.Streams, getenv func(string) string, environ []string) error {
	return Run(ctx, c, io, getenv, buildkite.New(nil, getenv, environ))
}

// A selected recipe whose job left no summary (a pod that never started,
// an OOM-killed job, a lost agent) is an error row, first, with its
// step's state; the counts match the rows.
func TestReportListsSelectedRecipesWithoutSummary(t *testing.T) {
	t.Parallel()
	dir := resultsWith(t, "gpt_oss_120b-h200")
	env := map[string]string{contract.SelectedEnv: contract.EncodeSelected([]string{"gpt_oss_120b-h200", "kimi_k2_5-b200", "lost-mi355x"})}
	zero, lostAgent := 0, -1
	states := func(context.Context) (map[string]JobState, error) {
		return map[string]JobState{"recipe:gpt_oss_120b-h200": {State: "passed", ExitStatus: &zero}, "recipe:kimi_k2_5-b200": {State: "expired"}, "recipe:lost-mi355x": {State: "failed", ExitStatus: &lostAgent}}, nil
	}
	var stdout, stderr strings.Builder
	err := runReport(context.Background(), Config{Results: dir, states: states}, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(env), nil)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, w := range []string{
		"### benchkite: 2 could not be judged, 1 passed of 3 recipe(s)",
		"| `kimi_k2_5-b200` | 💥 error | ",
		"no summary.json: the step is expired",
		"no summary.json: the step is failed (exit status -1)",
		// The step's state classifies a night without a summary.
		"Red nights by class: infra 2.",
		"(infra: agent lost: job failed) ",
		"(infra: job expired) ",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
	if i, j := strings.Index(out, "kimi_k2_5-b200"), strings.Index(out, "gpt_oss_120b-h200"); i < 0 || j < 0 || i > j {
		t.Errorf("the recipes without a summary are not listed first:\n%s", out)
	}

	// Without an API answer the state is unknown, and the report says why.
	stdout.Reset()
	noAPI := func(context.Context) (map[string]JobState, error) { return nil, errors.New("no Buildkite API token") }
	if err := runReport(context.Background(), Config{Results: dir, states: noAPI}, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(env), nil); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"no summary.json: the step is unknown", "the state of steps without a summary is not known: no Buildkite API token"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, stdout.String())
		}
	}
}

// A recipe that failed only a minimum score failed; it did not regress.
func TestReportCountsMinimumScoreFailuresAsFailed(t *testing.T) {
	t.Parallel()
	sums := []summary.Summary{{Recipe: "a", Verdict: summary.VerdictFail, Gates: []summary.GateResult{{Kind: summary.GateAccuracy, Subject: "gsm8k", Metric: "acc", Verdict: summary.VerdictFail}}}}
	got := renderSums(sums, nil, nil, nil, "")
	if !strings.HasPrefix(got, "### benchkite: 1 failed of 1 recipe(s)") || strings.Contains(got, "regressed") {
		t.Errorf("report head:\n%s", got)
	}
}

func TestSelectedRoundTrip(t *testing.T) {
	t.Parallel()
	var many []string
	for i := 0; i < 5000; i++ {
		many = append(many, fmt.Sprintf("recipe-number-%04d-mi355x", i))
	}
	v := contract.EncodeSelected(many)
	if len(v) > contract.MaxEnvValue {
		t.Fatalf("encoded %d bytes, over %d", len(v), contract.MaxEnvValue)
	}
	names, left := contract.ParseSelected(v)
	if len(names)+left != len(many) || left == 0 || names[0] != many[0] {
		t.Errorf("parsed %d names and %d left, want %d in all", len(names), left, len(many))
	}
}

// The report totals the build's GPU time, names the phase that took the
// most, what red nights lost, and prices it where the profiles say.
func TestReportAccountsGPUTime(t *testing.T) {
	t.Parallel()
	sums := []summary.Summary{
		{Recipe: "a", Verdict: summary.VerdictPass, NumGPUs: 8, GPUTime: &summary.GPUTime{GPUs: 8, Total: 7200, HourPrice: 2,
			Phases: map[string]float64{"load": 4000, "bench": 3000}}},
		{Recipe: "b", Verdict: summary.VerdictError, NumGPUs: 4, Failure: &summary.Failure{Class: "vllm", Signature: "gpu-oom"},
			GPUTime: &summary.GPUTime{GPUs: 4, Total: 3600, Lost: 3600, Saved: 1800, Phases: map[string]float64{"load": 3600}}},
	}
	out := renderSums(sums, nil, nil, nil, "")
	for _, w := range []string{
		"Red nights by class: vllm 1.",
		"**GPU time:** 3.0 GPU-h over 2 run(s); most in **load** (70%); 1.0 GPU-h lost to runs that could not be judged; about 0.5 GPU-h saved by stopping sweeps after a failed first point; cost 4.00 (1 of 2 runs priced).",
		"| GPU-h | 0.0 | 2.1 | 0.8 | 0.0 | 0.0 | 0.0 |",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
}

// A failed phase's cause reaches the build report's row, in the
// process's own words.
func TestReportShowsCause(t *testing.T) {
	t.Parallel()
	s := summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: "r-mi355x", GPU: "MI355X", NumGPUs: 8, Verdict: summary.VerdictError,
		Phases: []summary.Phase{{Name: summary.PhaseReady, Status: summary.StatusFailed, Error: "server exited before it was ready: vllm exited with code 1",
			Cause: "torch.OutOfMemoryError: HIP out of memory"}}}
	body := renderSums([]summary.Summary{s}, nil, nil, nil, "")
	if !strings.Contains(body, "**ready** failed: torch.OutOfMemoryError: HIP out of memory") {
		t.Errorf("the report does not show the cause:\n%s", body)
	}
}

// Tries the agent lost or stopped and Buildkite retried held GPUs too:
// the report reads every try from the API (include_retried_jobs), adds
// their GPU time to the build's, names their classes from the agent's
// signal reason, and classes a step that left no summary the same way.
func TestReportCountsRetriedTries(t *testing.T) {
	t.Parallel()
	api := bkapitest.NewServer(t, "org", "nightly", "tok")
	t0 := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	lostAgent, failed := -1, 1
	api.AddBuild(bkapitest.Build{Number: 900, State: "failed", CreatedAt: t0, FinishedAt: t0.Add(5 * time.Hour), Jobs: []bkapitest.Job{
		{ID: "a-1", StepKey: "recipe:a-h200", State: "failed", ExitStatus: &lostAgent, Retried: true, RetriedInJobID: "a-2",
			Signal: "SIGTERM", SignalReason: "agent_stop", StartedAt: t0, FinishedAt: t0.Add(30 * time.Minute)},
		{ID: "a-2", StepKey: "recipe:a-h200", State: "failed", ExitStatus: &lostAgent, Retried: true, RetriedInJobID: "a-3",
			SignalReason: "process_run_error", StartedAt: t0.Add(31 * time.Minute), FinishedAt: t0.Add(31 * time.Minute)},
		{ID: "a-3", StepKey: "recipe:a-h200", State: "passed", StartedAt: t0.Add(35 * time.Minute), FinishedAt: t0.Add(95 * time.Minute)},
		{ID: "b-1", StepKey: "recipe:b-mi355x", State: "failed", ExitStatus: &failed, Retried: true, RetriedInJobID: "b-2",
			SignalReason: "cancel", StartedAt: t0, FinishedAt: t0.Add(15 * time.Minute)},
		{ID: "b-2", StepKey: "recipe:b-mi355x", State: "failed", ExitStatus: &lostAgent, SignalReason: "agent_refused", StartedAt: t0.Add(20 * time.Minute), FinishedAt: t0.Add(21 * time.Minute)},
	}})
	dir := t.TempDir()
	s := summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: "a-h200", GPU: "H200", NumGPUs: 8, Verdict: summary.VerdictPass,
		GPUTime: &summary.GPUTime{GPUs: 8, Total: 8 * 3600, HourPrice: 3, Phases: map[string]float64{"load": 8 * 1800, "bench": 8 * 1800}}}
	if err := os.MkdirAll(filepath.Join(dir, s.Recipe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := summary.Write(filepath.Join(dir, s.Recipe, "summary.json"), s); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{contract.SelectedEnv: contract.EncodeSelected([]string{"a-h200", "b-mi355x"}), "BUILDKITE_BUILD_NUMBER": "900",
		"BUILDKITE_ORGANIZATION_SLUG": "org", "BUILDKITE_PIPELINE_SLUG": "nightly", "BK_TOKEN": "tok"}
	var stdout strings.Builder
	err := runReport(context.Background(), Config{Results: dir, API: baseline.APIConfig{URL: api.URL, TokenEnv: "BK_TOKEN"}},
		cliutil.Streams{Stdout: &stdout, Stderr: &stdout}, mapGetenv(env), nil)
	if err != nil {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	out := stdout.String()
	for _, w := range []string{
		// 8 GPUs × (30 + 0 min) of retried tries: 4.0 GPU-h, priced with the rest.
		"**GPU time:** 12.0 GPU-h in all, 8.0 GPU-h over 1 run(s); most in **load** (50%); 4.0 GPU-h held by 3 retried tries (canceled 1 · infra 2); cost 36.00.",
		"(infra: agent refused the job: job failed (agent_refused)) ",
		"Red nights by class: infra 1.",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
	var asked bool
	for _, r := range api.Requests() {
		asked = asked || r.Path == "/v2/organizations/org/pipelines/nightly/builds/900" && r.Query == "include_retried_jobs=true"
	}
	if !asked {
		t.Errorf("the report did not ask for the retried tries: %+v", api.Requests())
	}
}
