package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bisect/bisecttest"
	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/report"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// The build of the budget test: nights budgetFirst to budgetFirst+8 in
// the API (budgetGood fast ones, then slow ones), tonight budgetTonight.
const (
	budgetRecipe  = "budget-mi355x"
	budgetFirst   = 101
	budgetGood    = 6
	budgetTonight = 110
	budgetPace    = "20ms" // the stand-in's time per token tonight
)

// budgetWobble is each past night's fixed deviation, in percent.
var budgetWobble = []float64{1.5, -1, 0.5, -2, 1, -0.5, 2, -1.5, 0.5}

// budgetRecipeYAML is a bench-only nightly MI355X recipe whose throughput
// the regression detector judges with a 25 % floor.
const budgetRecipeYAML = `name: budget-mi355x
gpu: MI355X
num_gpus: 1
nightly: true
vllm:
  model: benchkite/tiny-model
vllm_bench:
  configs:
    - name: short
      backend: openai
      dataset: random
      input_len: 16
      output_len: 8
      num_prompts: 8
      max_concurrency: 2
      regression:
        rerun_on_alarm: false
        metrics:
          output_throughput: {max_drop_pct: 25}
`

func budgetCommit(i int) string { return fmt.Sprintf("%040x", 0xb0d6e7000+i) }

// TestE2EBudgetReleasesOrKeepsARegression takes a regression through a
// nightly build as the cluster runs it, every step from the generated
// pipeline run verbatim through the real agent's bootstrap: the history
// step, the recipe's GPU step (its throughput halved three nights ago and
// still low), the report step, and the next build's history step. The
// GPU step cannot see the night's other recipes: it exits
// contract.ExitRegressed, which its step soft-fails. The report step
// decides with the build's false-alarm budget. Released (a budget
// smaller than the regression's p-value): the report passes in green
// and starts no bisect. Kept (the default budget): the report fails in
// red and starts a bisect. Either way the next build's history counts
// the night as passed: slower, not wrong.
func TestE2EBudgetReleasesOrKeepsARegression(t *testing.T) {
	t.Parallel()
	requireLinux(t)

	// The registry of vLLM nightlies: the past nights' commits, three
	// pushed between the last good night and the first slow one: with the
	// first slow one, a bisect's four candidates.
	repo := bisecttest.Registry(t, "vllm/vllm-openai-rocm")
	var commits []string
	for i := budgetFirst; i <= budgetTonight; i++ {
		commits = append(commits, budgetCommit(i))
		if i == budgetFirst+budgetGood-1 {
			commits = append(commits, budgetCommit(1), budgetCommit(2), budgetCommit(3))
		}
	}
	bisecttest.Nightlies(t, repo, time.Date(2026, 11, 20, 2, 0, 0, 0, time.UTC), commits)

	// The checkout: the recipe, and profiles whose MI355X images are the
	// registry's, with a bisect budget.
	checkout := t.TempDir()
	if err := os.MkdirAll(filepath.Join(checkout, "workloads"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(checkout, "workloads", "budget_mi355x.yaml"), []byte(budgetRecipeYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	checkoutProfiles(t, checkout)
	profiles := budgetProfiles(t, checkout, repo)
	steps := budgetPipeline(t, checkout)
	gpuStep, histStep, reportStep := steps[contract.StepKey(budgetRecipe)], steps[contract.HistoryStepKey], steps[contract.ReportStepKey]
	if !gpuStep.softFails(contract.ExitRegressed) || !gpuStep.softFails(contract.ExitUnverified) || gpuStep.softFails(1) {
		t.Fatalf("the GPU step soft-fails %+v; want %d and %d, not 1", gpuStep.SoftFail, contract.ExitUnverified, contract.ExitRegressed)
	}

	// One night at tonight's pace, the past nights' template: the
	// nights before ran twice as fast, the last three as slow.
	cal := newE2E(t, budgetRecipe, budgetRecipeYAML)
	cal.setenv("FAKE_VLLM_TOKEN_DELAY", budgetPace, "VLLM_COMMIT", budgetCommit(0))
	checkCode(t, cal.run("--health-timeout", "5m"), contract.ExitUnverified)
	template := cal.summary()
	measured := benchMetric(t, template)
	api := bkapitest.NewServer(t, "benchkite", "benchkite-nightly", apiToken)
	for i, w := range budgetWobble {
		n := budgetFirst + i
		v := measured * (1 + w/100)
		s := template
		s.Verdict, s.Problems, s.Gates, s.VLLMCommit = summary.VerdictPass, nil, nil, budgetCommit(n)
		s.Buildkite = &summary.BuildkiteInfo{BuildNumber: strconv.Itoa(n), JobID: fmt.Sprintf("0190a000-0000-4000-8000-%012d", n), StepKey: contract.StepKey(budgetRecipe)}
		job := bkapitest.Job{ID: s.Buildkite.JobID, StepKey: contract.StepKey(budgetRecipe)}
		if i < budgetGood {
			v *= 2
		} else {
			// A slow night: its gate flagged it; its step soft-failed.
			s.Verdict = summary.VerdictFail
			s.Gates = []summary.GateResult{{Kind: summary.GateRegression, Subject: prRun, Metric: prMetric, Verdict: summary.VerdictFail}}
			job.State, job.SoftFailed, job.ExitStatus = "failed", true, ptr(contract.ExitRegressed)
		}
		s.Bench = slices.Clone(template.Bench)
		s.Bench[0].Metrics = map[string]float64{prMetric: v}
		s.Bench[0].OutputThroughput = v
		s.Bench[0].RepetitionValues = map[string][]float64{prMetric: {v}}
		created := time.Date(2026, 11, 20+i, 2, 0, 0, 0, time.UTC)
		api.AddBuild(bkapitest.Build{Number: n, CreatedAt: created, FinishedAt: created.Add(2 * time.Hour), Jobs: []bkapitest.Job{job}})
		api.AddArtifact(n, bkapitest.Artifact{JobID: s.Buildkite.JobID, Path: contract.SummaryPath(budgetRecipe), Content: baselinetest.Encode(t, s)})
	}

	// Tonight's build: what each step uploads lands where the next
	// step's artifact download looks (downloads/<step key>/).
	downloads := t.TempDir()
	job := func(step pipelineStep, build int) *pipelineJob {
		j := newStepJob(t, budgetRecipe, step, filepath.Join(checkout, "workloads"))
		if err := os.WriteFile(filepath.Join(j.dir, "agents", "profiles.yaml"), profiles, 0o644); err != nil {
			t.Fatal(err)
		}
		j.setenv("BUILDKITE_BUILD_NUMBER", strconv.Itoa(build),
			"BUILDKITE_BUILD_URL", fmt.Sprintf("https://buildkite.com/benchkite/benchkite-nightly/builds/%d", build),
			"BENCHKITE_API_URL", api.URL, "BUILDKITE_ORGANIZATION_SLUG", api.Org, "BUILDKITE_PIPELINE_SLUG", api.Pipeline)
		return j
	}
	published := func(j *pipelineJob, key string) {
		t.Helper()
		if err := copyTree(filepath.Join(j.dir, agentArtifacts), filepath.Join(downloads, strings.NewReplacer(":", "_").Replace(key))); err != nil {
			t.Fatal(err)
		}
	}
	runStep := func(j *pipelineJob) (int, string) {
		t.Helper()
		p := j.start(completes)
		j.waitBound(p, runBound)
		j.checkNoLeftovers()
		j.uploadArtifacts(p)
		return p.cmd.ProcessState.ExitCode(), p.out.String()
	}

	h := job(histStep, budgetTonight)
	h.secrets(map[string]string{"BENCHKITE_API_TOKEN": apiToken})
	if code, out := runStep(h); code != 0 {
		t.Fatalf("the history step exited %d:\n%s", code, out)
	}
	published(h, contract.HistoryStepKey)

	g := job(gpuStep, budgetTonight)
	g.setenv("FAKE_AGENT_DOWNLOADS", downloads, "FAKE_VLLM_TOKEN_DELAY", budgetPace, "VLLM_COMMIT", budgetCommit(budgetTonight))
	if err := os.Link(g.bin, filepath.Join(mkdir(t, downloads, "bootstrap", "bin"), "runner")); err != nil {
		t.Fatal(err)
	}
	code, out := runStep(g)
	s := g.summary()
	gate := regressionGate(t, s)
	cp := gate.ChangePoint
	// The premise: tonight is still regressed, the change point between
	// two known commits.
	if gate.Verdict != summary.VerdictFail || gate.Detector == nil || cp == nil || !cp.Found || cp.GoodRegime == nil ||
		cp.LastGood.VLLMCommit != budgetCommit(budgetFirst+budgetGood-1) || cp.FirstBad.VLLMCommit != budgetCommit(budgetFirst+budgetGood) {
		t.Fatalf("tonight's regression gate %+v (change point %+v); want a failure with the change point after #%d:\n%s", gate, cp, budgetFirst+budgetGood-1, lastLines(out, 40))
	}
	p := gate.Detector.P
	if !(p > 0 && p <= 0.05) {
		t.Fatalf("the regression's p-value %g: the case needs one the default budget (5 %%) keeps and a smaller one releases", p)
	}
	// The GPU step: regressed, soft-failed, yellow, never green.
	if code != contract.ExitRegressed || s.Verdict != summary.VerdictFail {
		t.Fatalf("the GPU step exited %d with verdict %s (%v), want %d and fail:\n%s", code, s.Verdict, s.Problems, contract.ExitRegressed, lastLines(out, 30))
	}
	g.checkAnnotation("warning", "regression gate")
	published(g, gpuStep.Key)
	tonight := bkapitest.Job{ID: s.Buildkite.JobID, StepKey: gpuStep.Key, State: "failed", SoftFailed: gpuStep.softFails(code), ExitStatus: &code}
	created := time.Date(2026, 11, 20+len(budgetWobble), 2, 0, 0, 0, time.UTC)
	api.AddBuild(bkapitest.Build{Number: budgetTonight, CreatedAt: created, FinishedAt: created.Add(2 * time.Hour), Jobs: []bkapitest.Job{tonight}})
	api.AddArtifact(budgetTonight, bkapitest.Artifact{JobID: tonight.ID, Path: contract.SummaryPath(budgetRecipe), Content: g.uploaded(t, "summary.json")})

	// The report step, once with a budget that releases the regression,
	// once with the default, which keeps it.
	reportStepRun := func(fdr string) (code int, out, body, style string, agent []string) {
		t.Helper()
		r := job(reportStep, budgetTonight)
		r.secrets(map[string]string{"BENCHKITE_API_TOKEN": apiToken})
		r.setenv("FAKE_AGENT_DOWNLOADS", downloads, "BENCHKITE_BUILD_FDR", fdr)
		code, out = runStep(r)
		r.recipe = report.Context
		body, style = r.annotation()
		return code, out, body, style, agentCommands(r.agentCalls())
	}
	t.Run("released", func(t *testing.T) {
		code, out, body, style, _ := reportStepRun(strconv.FormatFloat(p/2, 'g', -1, 64))
		if code != 0 || style != "success" {
			t.Errorf("the report step exited %d in %q, want 0 in green:\n%s", code, style, lastLines(out, 30))
		}
		for _, want := range []string{"### benchkite: 1 passed of 1 recipe(s)", "within the budget, not failures: `" + budgetRecipe + "`", "| ✅ pass | within the build's false-alarm budget, not a failure: short `output_throughput`"} {
			if !strings.Contains(body, want) {
				t.Errorf("the report lacks %q:\n%s", want, body)
			}
		}
		if strings.Contains(body, "Red nights by class") {
			t.Errorf("the report counts a released regression as a red night:\n%s", body)
		}
		if want := "- released regression: `" + budgetRecipe + "` short output_throughput, open since #"; !strings.Contains(body, want) || strings.Contains(body, "- open regression:") {
			t.Errorf("the report does not say the open regression was released (%q), or calls it open and red:\n%s", want, body)
		}
		if n := len(api.Created()); n != 0 || strings.Contains(out, "runner: bisect") {
			t.Errorf("a released regression started %d bisect build(s):\n%s", n, out)
		}

		// The next build's history step counts tonight as passed.
		next := job(histStep, budgetTonight+1)
		next.secrets(map[string]string{"BENCHKITE_API_TOKEN": apiToken})
		if code, out := runStep(next); code != 0 {
			t.Fatalf("the next build's history step exited %d:\n%s", code, out)
		}
		f, err := baseline.ReadFile(filepath.Join(next.dir, contract.HistoryArtifact))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, n := range f.Recipes[budgetRecipe].Nights {
			got = append(got, fmt.Sprintf("#%d failed=%v", n.BuildNumber, n.Failed))
		}
		if !slices.Contains(got, fmt.Sprintf("#%d failed=false", budgetTonight)) {
			t.Errorf("the next build's history holds %q; want #%d, passed", got, budgetTonight)
		}
	})
	t.Run("kept", func(t *testing.T) {
		code, out, body, style, agent := reportStepRun("")
		if code != 1 || style != "error" {
			t.Errorf("the report step exited %d in %q, want 1 in red:\n%s", code, style, lastLines(out, 30))
		}
		for _, want := range []string{"### benchkite: 1 regressed of 1 recipe(s)", "- open regression: `" + budgetRecipe + "` short output_throughput since #"} {
			if !strings.Contains(body, want) {
				t.Errorf("the report lacks %q:\n%s", want, body)
			}
		}
		if strings.Contains(body, "- released regression:") {
			t.Errorf("the report calls a kept regression released:\n%s", body)
		}
		created := api.Created()
		if len(created) != 1 || !strings.Contains(out, "runner: bisect "+budgetRecipe+": 4 candidate image(s)") {
			t.Fatalf("a kept regression started %d bisect build(s), want 1:\n%s", len(created), out)
		}
		if c := created[0]; c.Env["WORKLOADS"] != budgetRecipe || c.Env["BENCH_ONLY"] != "1" {
			t.Errorf("the bisect build's env %v, want %s alone, bench only", c.Env, budgetRecipe)
		}
		// The job states and the bisect share one API client: one token.
		if n := strings.Count(strings.Join(agent, "\n"), "secret get"); n != 1 {
			t.Errorf("the report step asked the agent for the token %d times, want once: %q", n, agent)
		}
	})
}

// softFails says whether the step soft-fails an exit status, as Buildkite
// decides it from the step's soft_fail list.
func (s pipelineStep) softFails(code int) bool {
	for _, f := range s.SoftFail {
		if f.ExitStatus == code {
			return true
		}
	}
	return false
}

// uploaded is a file of the recipe's results as the job uploaded it.
func (j *pipelineJob) uploaded(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(j.dir, agentArtifacts, "results", j.recipe, name))
	if err != nil {
		t.Fatalf("%s was not uploaded: %v", name, err)
	}
	return data
}

// budgetProfiles writes the checkout's profiles with the MI355X images in
// repo and a bisect budget, and returns them.
func budgetProfiles(t *testing.T, checkout, repo string) []byte {
	t.Helper()
	path := filepath.Join(checkout, "agents", "profiles.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, tail, ok := strings.Cut(string(data), "\nMI355X:\n")
	if !ok || !strings.Contains(tail, "  image_repo: vllm/vllm-openai-rocm\n") {
		t.Fatal("agents/profiles.yaml has no MI355X profile with image_repo vllm/vllm-openai-rocm")
	}
	tail = strings.Replace(tail, "  image_repo: vllm/vllm-openai-rocm\n", "  image_repo: "+repo+"\n  bisect_gpu_hours: 2\n", 1)
	out := []byte(head + "\nMI355X:\n" + tail)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// budgetPipeline runs the generator in the checkout as the bootstrap step
// does for a scheduled build and returns every step by key.
func budgetPipeline(t *testing.T, checkout string) map[string]pipelineStep {
	t.Helper()
	cmd := exec.Command(buildGenerator(t), "--workloads", "workloads", "--agents", "agents/profiles.yaml", "--no-resolve")
	cmd.Dir = checkout
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + checkout, "BUILDKITE_SOURCE=schedule", "BUILDKITE_BRANCH=main"}
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
	steps := map[string]pipelineStep{}
	for _, s := range p.Steps {
		steps[s.Key] = s
	}
	for _, k := range []string{contract.HistoryStepKey, contract.StepKey(budgetRecipe), contract.ReportStepKey} {
		if _, ok := steps[k]; !ok {
			t.Fatalf("the generated pipeline has no step %q:\n%s", k, out)
		}
	}
	return steps
}

func mkdir(t *testing.T, elem ...string) string {
	t.Helper()
	dir := filepath.Join(elem...)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func ptr[T any](v T) *T { return &v }
