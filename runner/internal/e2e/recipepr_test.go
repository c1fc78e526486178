package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Names and numbers of the recipe pull request drill.
const (
	prRecipe    = "recipe-pr-mi355x"
	prMetric    = "output_throughput"
	prRun       = "short"
	prNumber    = "7"
	prBranch    = "fewer-seqs"
	prBuild     = 111 // the pull request's build; the nightlies are 101 to 110
	firstNight  = 101
	nightlyPace = 100 * time.Millisecond // the stand-in's time per token in the nightlies
)

// nightWobble is each nightly's fixed deviation from the measured night,
// in percent, oldest first: the night-to-night noise of the history.
var nightWobble = []float64{0.4, -0.3, 0.2, -0.5, 0.1, -0.2, 0.5, -0.1, 0.3, -0.4}

// TestE2ERecipePRJudgedAgainstLastNightly: a pull request that changes a
// serve arg of a recipe starts a new fingerprint, yet its run is judged
// against the nightlies of the recipe it changes, as the cluster runs
// it: the generator, in a checkout of the PR branch, makes the build;
// its history step (the CPU step, `runner history`) and the recipe's GPU
// step run verbatim through the real agent's bootstrap, with the
// variables of a pull request's build, the Buildkite API on loopback and
// the vLLM stand-in serving as fast as the nightlies, or 10 % slower.
// Slower fails in red with the delta against the nightlies, naming the
// latest; no different passes. The nightlies are the old recipe's own
// run (its summary.json, its fingerprint) with a little fixed noise.
func TestE2ERecipePRJudgedAgainstLastNightly(t *testing.T) {
	t.Parallel()
	before, err := os.ReadFile("testdata/recipepr/before.yaml")
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.ReadFile("testdata/recipepr/after.yaml")
	if err != nil {
		t.Fatal(err)
	}

	// A night of the old recipe, as the nightly runs it: its first, so
	// the history step finds nothing and the regression check waits.
	night := newE2E(t, prRecipe, string(before))
	empty := bkapitest.NewServer(t, "benchkite", "benchkite-nightly", apiToken)
	night.setenv("FAKE_VLLM_TOKEN_DELAY", nightlyPace.String(),
		"BENCHKITE_API_URL", empty.URL, "BUILDKITE_ORGANIZATION_SLUG", empty.Org, "BUILDKITE_PIPELINE_SLUG", empty.Pipeline,
		"BUILDKITE_PIPELINE_DEFAULT_BRANCH", "main", "BUILDKITE_BUILD_NUMBER", fmt.Sprint(firstNight-1))
	hist := night.history([]string{"BUILDKITE_API_TOKEN", apiToken}, contract.Need{Recipe: prRecipe, Nights: 10})
	checkCode(t, night.run("--health-timeout", "5m", "--baselines", hist), 0)
	old := night.summary()
	measured := benchMetric(t, old)
	if old.Fingerprint == nil || len(old.Bench[0].RepetitionValues[prMetric]) != 3 {
		t.Fatalf("the nightly's summary has fingerprint %+v and repetitions %v; want both", old.Fingerprint, old.Bench[0].RepetitionValues)
	}

	tests := []struct {
		name  string
		pace  time.Duration // the stand-in's time per token in the PR's run
		code  int
		gate  string // the regression gate's verdict
		style string // the annotation's
		// delta is the expected change against the nightlies, in percent.
		delta float64
	}{
		{name: "slower", pace: nightlyPace * 10 / 9, code: contract.ExitRegressed, gate: summary.VerdictFail, style: "warning", delta: -10},
		{name: "no difference", pace: nightlyPace, code: 0, gate: summary.VerdictPass, style: "success", delta: 0},
	}
	checkout, histStep, gpuStep, needs := prPipeline(t, before, after)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api, nightly := nightliesAPI(t, old)
			latest := nightly[len(nightly)-1]
			baselineTput := logMedian(nightly)
			e := newStepJob(t, prRecipe, gpuStep, checkout)
			h := newStepJob(t, prRecipe, histStep, checkout)
			// The history step's needs, the bootstrap step's artifact.
			if err := os.WriteFile(filepath.Join(h.downloads(), contract.BootstrapStepKey, historyNeedsFile), needs, 0o644); err != nil {
				t.Fatal(err)
			}
			// The variables Buildkite gives every job of the pull
			// request's build, and the API the history step reads.
			for _, j := range []*pipelineJob{e, h} {
				j.setenv(prBuildEnv()...)
				j.setenv("BENCHKITE_API_URL", api.URL, "BUILDKITE_ORGANIZATION_SLUG", api.Org, "BUILDKITE_PIPELINE_SLUG", api.Pipeline)
			}
			// The CPU step: its token is the agent's secret, and what it
			// uploads is what the GPU job's download finds.
			h.secrets(map[string]string{"BENCHKITE_API_TOKEN": apiToken})
			h.setenv("FAKE_AGENT_ARTIFACTS", filepath.Join(e.downloads(), contract.HistoryStepKey))
			hp := h.start(completes)
			h.waitBound(hp, runBound)
			if code := hp.cmd.ProcessState.ExitCode(); code != 0 {
				t.Fatalf("the history step exited %d:\n%s", code, hp.out.String())
			}
			h.uploadArtifacts(hp)
			fetched := len(api.Requests())
			if fetched == 0 {
				t.Fatalf("the history step made no API request:\n%s", hp.out.String())
			}

			// The GPU step, with a token at hand that it must not use.
			e.setenv("FAKE_VLLM_TOKEN_DELAY", tt.pace.String(), "BUILDKITE_API_TOKEN", apiToken)
			p := e.start(completes)
			e.waitBound(p, runBound)
			o := outcome{code: p.cmd.ProcessState.ExitCode(), stdout: p.out.String()}
			if got := api.Requests()[fetched:]; len(got) != 0 {
				t.Errorf("the GPU job made %d API request(s): %+v", len(got), got)
			}

			s := e.summary()
			tonight := benchMetric(t, s)
			// The case's premise: the stand-in served at the intended
			// speed, within what the gate's 5 % floor leaves.
			delta := (tonight/measured - 1) * 100
			if math.Abs(delta-tt.delta) > 3 {
				t.Fatalf("at %s per token the bench measured %.1f tok/s, %+.1f%% against the nightly's %.1f; the case needs about %+.0f%%",
					tt.pace, tonight, delta, measured, tt.delta)
			}
			checkCode(t, o, tt.code)
			if s.Buildkite == nil || s.Buildkite.PullRequest != prNumber {
				t.Errorf("summary buildkite = %+v, want pull request %s", s.Buildkite, prNumber)
			}
			if s.Fingerprint == nil || s.Fingerprint.Hash == old.Fingerprint.Hash {
				t.Fatalf("fingerprint %+v, want one other than the nightly's %s", s.Fingerprint, old.Fingerprint.Hash)
			}
			if changed := s.Fingerprint.Changed(old.Fingerprint); !slices.Equal(changed, []string{"serve args"}) {
				t.Errorf("the fingerprint changed in %q, want only the serve args", changed)
			}

			g := regressionGate(t, s)
			if g.Verdict != tt.gate {
				t.Errorf("regression gate verdict %q, want %q: %s", g.Verdict, tt.gate, g.Message)
			}
			// What was judged is what the bench measured, against the
			// nightlies' median.
			if g.Value == nil || *g.Value != tonight {
				t.Errorf("the gate judged %v, the bench measured %v", ptrValue(g.Value), tonight)
			}
			if g.Baseline == nil || math.Abs(*g.Baseline-baselineTput) > 1e-9*baselineTput {
				t.Errorf("the gate's baseline is %v, want the nightlies' median (of the logs, as the detector takes it) %v", ptrValue(g.Baseline), baselineTput)
			}
			if g.DeltaPct == nil {
				t.Fatalf("the gate shows no delta against the nightlies: %s", g.Message)
			}
			if math.Abs(*g.DeltaPct-(tonight/baselineTput-1)*100) > 0.01 {
				t.Errorf("the gate's delta is %v%%, want %.2f%% (%v against %v)", ptrValue(g.DeltaPct), (tonight/baselineTput-1)*100, tonight, baselineTput)
			}
			for _, want := range []string{
				"recipe changed tonight (serve args): judged against the nights of the old recipe",
				fmt.Sprintf("the latest #%d at %.4g", firstNight+len(nightly)-1, latest),
			} {
				if !strings.Contains(g.Message, want) {
					t.Errorf("the gate's message lacks %q:\n%s", want, g.Message)
				}
			}
			// The annotation says it, in red when the run fails: the gate's
			// row and the run's delta against the nightlies.
			row, cell := "| ✅ pass | regression | short | `output_throughput` |", "| "+annotate.Pct(*g.DeltaPct)+" |"
			notes := []string{"### ✅ `" + prRecipe + "`: pass"}
			if tt.gate == summary.VerdictFail {
				row, cell = "| ❌ fail | regression | short | `output_throughput` |", "| ❌ "+annotate.Pct(*g.DeltaPct)+" |"
				// The limit is the floor, or wider where tonight's own
				// repetitions disagree (the machine's load): the summary's.
				if d := g.Detector; d == nil || d.ThresholdPct < 5 || d.FloorPct != 5 {
					t.Errorf("the gate's detector reading %+v, want a threshold of at least the 5 %% floor", d)
				}
				notes = []string{"### ❌ `" + prRecipe + "`: fail (perf: regression gate)", "(" + annotate.Pct(*g.DeltaPct) + ", limit " + annotate.Limit(g) + ")"}
			}
			// A recipe change is a known change point: said as such, and
			// the trend picture keeps the nightlies. The previous nights are
			// the default branch's, not the PR's.
			notes = append(notes, "**Recipe changed:** the recipe changed tonight: serve args (build #110 ran the old recipe). A known change point")
			nights := "[previous nights](https://buildkite.com/benchkite/benchkite-nightly/builds?branch=main)"
			e.checkAnnotation(tt.style, append(notes, row, cell, nights)...)
			if strings.Contains(o.stdout, "no trend picture") {
				t.Errorf("the job drew no trend picture though the nightlies are there")
			}
			if body, _ := e.annotation(); strings.Contains(body, "branch="+prBranch) {
				t.Errorf("the annotation links the pull request's branch %s:\n%s", prBranch, body)
			}
			// A failed gate is a verdict: the log and the summary say the
			// gate's numbers, and no line of the server's log (stopped by
			// the runner before the gates) stands as its cause.
			if gp := s.Phase(summary.PhaseGate); gp == nil || gp.Cause != "" {
				t.Errorf("the gate phase is %+v, want it with no cause of its own", gp)
			}
			if strings.Contains(o.stdout, "runner: gate cause:") {
				t.Errorf("the log gives the gate a cause:\n%s", o.stdout)
			}
			// The agent's bootstrap ends the log with lines of its own.
			if tt.gate == summary.VerdictFail {
				if !strings.Contains(o.stdout, "runner: gate failed: 1 gate(s) failed: short output_throughput = ") {
					t.Errorf("the log does not say which gate failed:\n%s", o.stdout)
				}
				checkLastLines(t, o, tailLines+4, "+++ :warning: "+prRecipe+": regressed (soft-failed", "gate failed: short output_throughput = ", "recipe changed tonight (serve args)")
			} else {
				checkLastLines(t, o, tailLines+4, "+++ :white_check_mark: "+prRecipe+" passed")
			}
			e.checkNoLeftovers()
		})
	}
}

// nightliesAPI is a Buildkite API holding a scheduled nightly build of
// the recipe for each nightWobble, builds firstNight on, each with the
// night's summary: its numbers moved by the wobble. It returns the
// nights' measured metric, oldest first.
func nightliesAPI(t *testing.T, night summary.Summary) (*bkapitest.Server, []float64) {
	t.Helper()
	srv := bkapitest.NewServer(t, "benchkite", "benchkite-nightly", apiToken)
	var values []float64
	for i, w := range nightWobble {
		n := firstNight + i
		s := night
		s.Buildkite = &summary.BuildkiteInfo{}
		*s.Buildkite = *night.Buildkite
		s.Buildkite.BuildNumber = fmt.Sprint(n)
		s.Buildkite.JobID = fmt.Sprintf("0190a000-0000-4000-8000-%012d", n)
		s.Bench = slices.Clone(night.Bench)
		b := &s.Bench[0]
		f := 1 + w/100
		b.Metrics = map[string]float64{}
		for k, v := range night.Bench[0].Metrics {
			b.Metrics[k] = v
		}
		b.Metrics[prMetric] *= f
		b.OutputThroughput *= f
		b.RepetitionValues = map[string][]float64{}
		for k, v := range night.Bench[0].RepetitionValues {
			b.RepetitionValues[k] = slices.Clone(v)
		}
		for j := range b.RepetitionValues[prMetric] {
			b.RepetitionValues[prMetric][j] *= f
		}
		values = append(values, b.Metrics[prMetric])
		srv.AddBuild(bkapitest.Build{
			Number:     n,
			CreatedAt:  time.Date(2026, 2, 1+i, 2, 0, 0, 0, time.UTC),
			FinishedAt: time.Date(2026, 2, 1+i, 4, 0, 0, 0, time.UTC),
			Jobs:       []bkapitest.Job{{ID: s.Buildkite.JobID, StepKey: contract.StepKey(prRecipe)}},
		})
		srv.AddArtifact(n, bkapitest.Artifact{JobID: s.Buildkite.JobID, Path: contract.SummaryPath(prRecipe), Content: baselinetest.Encode(t, s)})
	}
	return srv, values
}

// benchMetric is the run's measured output throughput.
func benchMetric(t *testing.T, s summary.Summary) float64 {
	t.Helper()
	if len(s.Bench) != 1 || s.Bench[0].Name != prRun || s.Bench[0].Status != summary.StatusOK {
		t.Fatalf("summary bench = %+v, want %s measured", s.Bench, prRun)
	}
	v, ok := s.Bench[0].Metrics[prMetric]
	if !ok || v <= 0 {
		t.Fatalf("summary bench %s has %s = %v", prRun, prMetric, v)
	}
	return v
}

// regressionGate is the run's regression gate on the metric.
func regressionGate(t *testing.T, s summary.Summary) summary.GateResult {
	t.Helper()
	for _, g := range s.Gates {
		if g.Kind == summary.GateRegression && g.Subject == prRun && g.Metric == prMetric {
			return g
		}
	}
	t.Fatalf("no regression gate on %s %s in %+v", prRun, prMetric, s.Gates)
	return summary.GateResult{}
}

// logMedian is the median of v taken on the logarithms, as the detector
// takes it: with an even count, the geometric mean of the middle two.
func logMedian(v []float64) float64 {
	s := make([]float64, len(v))
	for i, x := range v {
		s[i] = math.Log(x)
	}
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return math.Exp(s[n/2])
	}
	return math.Exp((s[n/2-1] + s[n/2]) / 2)
}

// ptrValue prints a number the summary may leave out.
func ptrValue(p *float64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// prBuildEnv is what Buildkite sets in every job of the pull request's
// build, besides what a nightly's job has.
func prBuildEnv() []string {
	return []string{
		"BUILDKITE_SOURCE", "webhook",
		"BUILDKITE_BRANCH", prBranch,
		"BUILDKITE_PULL_REQUEST", prNumber,
		"BUILDKITE_PULL_REQUEST_BASE_BRANCH", "main",
		"BUILDKITE_PULL_REQUEST_REPO", "https://github.com/benchkite/benchkite.git",
		"BUILDKITE_PULL_REQUEST_DRAFT", "false",
		"BUILDKITE_MESSAGE", "Fewer sequences per batch",
		"BUILDKITE_BUILD_CREATOR", "Keith Pitt",
		"BUILDKITE_COMMIT", "89abcdef0123456789abcdef0123456789abcdef",
		"BUILDKITE_BUILD_NUMBER", fmt.Sprint(prBuild),
		"BUILDKITE_BUILD_URL", fmt.Sprintf("https://buildkite.com/benchkite/benchkite-nightly/builds/%d", prBuild),
	}
}

var (
	generatorOnce sync.Once
	generatorBin  string
	generatorErr  error
)

// buildGenerator builds the generator once per test binary, next to the
// runner binary (TestMain removes both).
func buildGenerator(t *testing.T) string {
	t.Helper()
	runner := buildRunner(t)
	generatorOnce.Do(func() {
		generatorBin = filepath.Join(filepath.Dir(runner), "generator")
		cmd := exec.Command("go", "build", "-o", generatorBin, "./generator")
		cmd.Dir = testutil.ModuleRoot(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			generatorErr = fmt.Errorf("build the generator: %w\n%s", err, out)
		}
	})
	if generatorErr != nil {
		t.Fatal(generatorErr)
	}
	return generatorBin
}

// prPipeline is the pull request's checkout and build: a repository
// whose main holds before and another nightly recipe, and whose PR
// branch changes before into after; the generator, run in it as the
// bootstrap step runs it, selects the changed recipe alone. It returns
// the checkout's workloads folder, the history step and the recipe's
// GPU step.
func prPipeline(t *testing.T, before, after []byte) (workloads string, history, gpu pipelineStep, needs []byte) {
	t.Helper()
	gen := buildGenerator(t)
	dir := t.TempDir()
	checkoutProfiles(t, dir)
	recipe := filepath.Join(dir, "workloads", "recipe_pr_mi355x.yaml")
	if err := copyTree(filepath.Join("testdata", "pipeline", "workloads"), filepath.Join(dir, "workloads")); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=benchkite", "GIT_AUTHOR_EMAIL=ci@benchkite.invalid", "GIT_COMMITTER_NAME=benchkite", "GIT_COMMITTER_EMAIL=ci@benchkite.invalid"}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	if err := os.WriteFile(recipe, before, 0o644); err != nil {
		t.Fatal(err)
	}
	git("init", "--quiet", "--initial-branch=main")
	git("add", "--all")
	git("commit", "--quiet", "--message", "nightly recipes")
	git("update-ref", "refs/remotes/origin/main", "HEAD")
	git("checkout", "--quiet", "-b", prBranch)
	if err := os.WriteFile(recipe, after, 0o644); err != nil {
		t.Fatal(err)
	}
	git("commit", "--quiet", "--all", "--message", "Fewer sequences per batch")

	cmd := exec.Command(gen, "--workloads", "workloads", "--agents", "agents/profiles.yaml", "--no-resolve", "--history-needs", historyNeedsFile)
	cmd.Dir = dir
	cmd.Env = env
	for kv := prBuildEnv(); len(kv) >= 2; kv = kv[2:] {
		cmd.Env = append(cmd.Env, kv[0]+"="+kv[1])
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("generator: %v\n%s", err, stderr.String())
	}
	var p struct {
		Steps []pipelineStep `json:"steps"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatalf("generator output: %v\n%s", err, out)
	}
	var keys, recipes []string
	for _, s := range p.Steps {
		keys = append(keys, s.Key)
		switch {
		case s.Key == contract.HistoryStepKey:
			history = s
		case strings.HasPrefix(s.Key, contract.StepKey("")):
			recipes = append(recipes, s.Key)
			gpu = s
		}
	}
	if history.Key == "" || !slices.Equal(recipes, []string{contract.StepKey(prRecipe)}) {
		t.Fatalf("the pull request's pipeline has steps %q, want the history step and %s alone of the recipes", keys, contract.StepKey(prRecipe))
	}
	needs, err = os.ReadFile(filepath.Join(dir, historyNeedsFile))
	if err != nil {
		t.Fatalf("the generator wrote no %s: %v", historyNeedsFile, err)
	}
	if got, want := string(needs), contract.EncodeNeeds([]contract.Need{{Recipe: prRecipe, Nights: 10}}); got != want {
		t.Errorf("the history step fetches %q, want %q", got, want)
	}
	if v, ok := history.Env[contract.HistoryEnv]; ok {
		t.Errorf("the history step also carries %s=%q in its env", contract.HistoryEnv, v)
	}
	return filepath.Join(dir, "workloads"), history, gpu, needs
}

// historyNeedsFile is where the bootstrap step has the generator write
// the history step's needs (.buildkite/pipeline.yml), and the artifact
// the history step downloads.
const historyNeedsFile = "history-needs.tsv"
