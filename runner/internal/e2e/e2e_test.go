package e2e

// End-to-end tests and fault drills: the runner binary as a real process
// against the stand-in vllm, lm_eval and buildkite-agent programs. Each
// drill checks what a person looking at a failed nightly would look at:
// the failing phase in summary.json, the exit status, the results that
// survived, the annotation, the end of the log, and that no process was
// left behind.

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/openai"
	"github.com/benchkite/benchkite/runner/internal/results"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
	"github.com/benchkite/benchkite/workloads/workloadstest"
	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// tailLines is how much of the end of the log must name the failure.
const tailLines = 6

func checkPhases(t *testing.T, s summary.Summary, want map[string]string) {
	t.Helper()
	if diff := cmp.Diff(phaseStatuses(s), want); diff != "" {
		t.Errorf("summary phases diff (-got +want):\n%s", diff)
	}
}

func checkCode(t *testing.T, o outcome, want int) {
	t.Helper()
	if o.code != want {
		t.Fatalf("runner exit code = %d, want %d; log:\n%s\nstderr:\n%s", o.code, want, o.stdout, o.stderr)
	}
}

// listFiles lists the regular files under dir, relative to it.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel, _ := filepath.Rel(dir, path)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// benchJSON reads a bench result file as raw JSON numbers.
func benchJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

func TestE2EHappyPath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		covered bool // the step's artifact_paths upload the results
	}{
		{name: "runner uploads the results"},
		{name: "step artifact_paths upload the results", covered: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const name = "e2e-happy"
			e := newE2E(t, name, tinyRecipe(name, 3))
			if tt.covered {
				e.setenv("BUILDKITE_ARTIFACT_PATHS", "results/"+name+"/**/*")
			}
			o := e.run("--health-timeout", "5m")
			checkCode(t, o, 0)

			s := e.summary()
			checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "ok", "bench": "ok", "lm_eval": "ok", "gate": "ok"})
			// The bench sampled greedily, and summary.json says so.
			if len(s.Bench) == 0 || s.Bench[0].Temperature == nil || *s.Bench[0].Temperature != 0 {
				t.Errorf("summary bench temperature = %v, want 0 recorded", s.Bench)
			}
			if s.Verdict != summary.VerdictPass {
				t.Errorf("verdict = %q, want pass", s.Verdict)
			}
			if s.Buildkite == nil || s.Buildkite.JobID != e.env["BUILDKITE_JOB_ID"] {
				t.Errorf("summary buildkite = %+v, want job %s", s.Buildkite, e.env["BUILDKITE_JOB_ID"])
			}

			// Bench: three valid repetitions and their median.
			if len(s.Bench) != 1 || s.Bench[0].Status != summary.StatusOK || s.Bench[0].File != "bench-short.json" {
				t.Fatalf("summary bench = %+v, want one ok run in bench-short.json", s.Bench)
			}
			var tput []float64
			for rep := 1; rep <= 3; rep++ {
				m := benchJSON(t, e.results("bench", fmt.Sprintf("bench-short-run-%d.json", rep)))
				if m["completed"] != 8.0 {
					t.Errorf("repetition %d completed %v of 8 prompts", rep, m["completed"])
				}
				tput = append(tput, m["output_throughput"].(float64))
			}
			slices.Sort(tput)
			median := benchJSON(t, e.results("bench-short.json"))
			if median["output_throughput"] != tput[1] {
				t.Errorf("bench-short.json output_throughput = %v, want the median of %v", median["output_throughput"], tput)
			}
			if s.Bench[0].OutputThroughput != tput[1] {
				t.Errorf("summary output_throughput = %v, want the median %v", s.Bench[0].OutputThroughput, tput[1])
			}
			b, err := results.ParseBenchFile(e.results("bench-short.json"))
			if err != nil {
				t.Fatalf("bench-short.json: %v", err)
			}
			if err := b.Valid(8); err != nil {
				t.Errorf("bench-short.json: %v", err)
			}

			// Accuracy: the stand-in answers every question right.
			if len(s.Accuracy) != 1 || s.Accuracy[0].Status != summary.StatusOK {
				t.Fatalf("summary accuracy = %+v, want one ok task", s.Accuracy)
			}
			acc := s.Accuracy[0]
			if got := acc.Metrics["exact_match,flexible-extract"]; got != 1 {
				t.Errorf("gsm8k exact_match,flexible-extract = %v, want 1", got)
			}
			if acc.File == "" || !fileExists(e.results(acc.File)) {
				t.Errorf("lm_eval results file %q not in the results", acc.File)
			}

			if starts := e.serverStarts(); len(starts) != 1 || !slices.Contains(starts[0], strconv.Itoa(e.port)) {
				t.Errorf("vllm serve started as %q, want once on port %d", starts, e.port)
			}

			e.checkAnnotation("success", "### ✅ `e2e-happy`: pass", "| short | 2 |", "| gsm8k | `exact_match,flexible-extract` | 1.0000 |")
			calls := e.agentCalls()
			// No secret get: the GPU job holds no API token.
			wantCmds := []string{"artifact upload", "annotate"}
			if tt.covered {
				wantCmds = []string{"annotate"}
			}
			if diff := cmp.Diff(agentCommands(calls), wantCmds); diff != "" {
				t.Errorf("buildkite-agent calls diff (-got +want):\n%s", diff)
			}
			uploaded := listFiles(t, filepath.Join(e.dir, agentArtifacts, "results", name))
			if tt.covered {
				if len(uploaded) != 0 {
					t.Errorf("the runner uploaded %q although the step's artifact_paths cover them", uploaded)
				}
				if !strings.Contains(o.stdout, "the step's artifact_paths upload results/e2e-happy/**/*") {
					t.Errorf("the log does not say the step uploads the results:\n%s", o.stdout)
				}
			} else if diff := cmp.Diff(uploaded, listFiles(t, e.results())); diff != "" {
				t.Errorf("uploaded artifacts diff (-got +want every result):\n%s", diff)
			}
			checkLastLines(t, o, 1, "+++ :white_check_mark: e2e-happy passed")
			e.checkNoLeftovers()
		})
	}
}

func TestE2EServerExitsDuringLoad(t *testing.T) {
	t.Parallel()
	const name = "e2e-load-crash"
	const rootCause = "torch.OutOfMemoryError: CUDA out of memory (drill)"
	e := newE2E(t, name, tinyRecipe(name, 1))
	e.setenv("FAKE_VLLM_STARTUP_DELAY", "1s", "FAKE_VLLM_EXIT_DURING_LOAD", "1", "FAKE_VLLM_EXIT_MESSAGE", rootCause)
	// The run's bound is far below this timeout: ready must notice the
	// exit, not wait it out.
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 1)

	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "failed", "bench": "not-run", "lm_eval": "not-run", "gate": "ok"})
	if err := phaseError(s, "ready"); !strings.Contains(err, "server exited before it was ready: vllm exited with code 1") {
		t.Errorf("ready error = %q, want the server's exit", err)
	}
	if s.Verdict != summary.VerdictError {
		t.Errorf("verdict = %q, want error", s.Verdict)
	}
	// The cause travels: the summary, the annotation and the log name it,
	// not only "exited with code 1".
	if p := s.Phase("ready"); p == nil || !strings.Contains(p.Cause, rootCause) {
		t.Errorf("ready phase = %+v, want the cause %q", p, rootCause)
	}
	log, err := os.ReadFile(e.results("server.log"))
	if err != nil || !strings.Contains(string(log), rootCause) {
		t.Errorf("server.log (err %v) lacks the root cause %q", err, rootCause)
	}
	// The server's last lines are in the job log, right after the failure.
	_, after, ok := strings.Cut(o.stdout, "+++ :warning: last 80 lines of the server log")
	if !ok || !strings.Contains(after, rootCause) {
		t.Errorf("the log does not show the server's last lines with %q:\n%s", rootCause, o.stdout)
	}
	// The engine's root cause, from the server's last lines, classes the
	// night: the summary, the annotation's first line.
	// The root cause is the engine process's, named as vLLM names it.
	engineRoot := regexp.MustCompile(`^\(EngineCore pid=\d+\) ` + regexp.QuoteMeta(rootCause) + `$`)
	if f := s.Failure; f == nil || f.Class != "vllm" || f.Signature != "gpu-oom" || f.Phase != "ready" || !engineRoot.MatchString(f.Line) || f.Source == "" {
		t.Errorf("failure = %+v, want class vllm/gpu-oom in ready with the line %q", f, rootCause)
	}
	// The GPU time it held went to loading, and bought no verdict.
	if g := s.GPUTime; g == nil || g.GPUs != 1 || g.Phases["load"] <= 0 || g.Total < g.Phases["load"] || g.Lost != g.Total {
		t.Errorf("gpu_time = %+v, want load time, all of it lost", g)
	}
	e.checkUploaded("summary.json", "server.log", "annotation.md")
	e.checkAnnotation("error", "### 💥 `e2e-load-crash`: error (vllm: gpu-oom) — **ready** failed: (EngineCore pid=", ") "+rootCause+"\n")
	checkLastLines(t, o, tailLines, "+++ :x: e2e-load-crash: error", "ready failed: ready: server exited before it was ready: vllm exited with code 1")
	e.checkNoLeftovers()
}

// twoConfigs adds a second bench config to tinyRecipe's.
var twoConfigs = shortBench("second")

func TestE2EServerDiesMidBench(t *testing.T) {
	t.Parallel()
	const name = "e2e-bench-crash"
	e := newE2E(t, name, tinyRecipe(name, 3)+twoConfigs)
	// The first repetition's requests pass; the engine dies in the
	// second.
	e.setenv("FAKE_VLLM_DIE_AFTER_REQUESTS", "12")
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 1)

	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "ok", "bench": "failed", "lm_eval": "not-run", "gate": "ok"})
	if len(s.Bench) != 2 {
		t.Fatalf("summary bench = %+v, want both configs", s.Bench)
	}
	if b := s.Bench[0]; b.Status != summary.StatusFailed || !strings.Contains(b.Error, "repetition 2: incomplete benchmark run") {
		t.Errorf("first run = %s %q, want failed in repetition 2", b.Status, b.Error)
	}
	if b := s.Bench[1]; b.Status != summary.StatusNotRun || b.Error != "server exited" {
		t.Errorf("second run = %s %q, want not-run: server exited", b.Status, b.Error)
	}
	if why := phaseError(s, "lm_eval"); why != "server exited" {
		t.Errorf("lm_eval skipped for %q, want server exited", why)
	}
	if len(s.Accuracy) != 0 {
		t.Errorf("accuracy = %+v, want none", s.Accuracy)
	}
	// What was measured before the crash stays.
	if m := benchJSON(t, e.results("bench", "bench-short-run-1.json")); m["completed"] != 8.0 {
		t.Errorf("repetition 1 completed %v, want 8", m["completed"])
	}
	if m := benchJSON(t, e.results("bench", "bench-short-run-2.json")); m["failed"] == 0.0 {
		t.Errorf("repetition 2 reports no failed requests")
	}
	if fileExists(e.results("bench-short.json")) {
		t.Errorf("a median was written from a failed run")
	}
	if !strings.Contains(o.stdout, "+++ :warning: the server exited during the run (vllm exited with code 1)") {
		t.Errorf("the log does not report the server's exit:\n%s", o.stdout)
	}
	e.checkUploaded("summary.json", "server.log", "bench/bench-short-run-1.json", "bench/bench-short-run-2.json", "bench-short.log")
	e.checkAnnotation("error", "**bench** failed: ", "EngineDeadError", "| short | 2 | | | | | | | | | ❌ failed")
	checkLastLines(t, o, tailLines, "+++ :x: e2e-bench-crash: error", "bench failed: short: repetition 2",
		"server exited during the run: vllm exited with code 1")
	e.checkNoLeftovers()
}

func TestE2ENeverHealthy(t *testing.T) {
	t.Parallel()
	const name = "e2e-never-healthy"
	e := newE2E(t, name, tinyRecipe(name, 1))
	e.setenv("FAKE_VLLM_NEVER_HEALTHY", "true")
	o := e.run("--health-timeout", "2s")
	checkCode(t, o, 1)

	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "failed", "bench": "not-run", "lm_eval": "not-run", "gate": "ok"})
	if err := phaseError(s, "ready"); !strings.Contains(err, "server not ready in time") || !strings.Contains(err, "/health answered 503") {
		t.Errorf("ready error = %q, want a timeout naming the 503", err)
	}
	if !strings.Contains(o.stdout, "+++ :warning: last 80 lines of the server log") {
		t.Errorf("the log does not show the server's last lines:\n%s", o.stdout)
	}
	// The server ran until teardown stopped it, gracefully.
	if log, _ := os.ReadFile(e.results("server.log")); !strings.Contains(string(log), "Shutting down") {
		t.Errorf("server.log does not show a graceful shutdown:\n%s", log)
	}
	e.checkUploaded("summary.json", "server.log")
	e.checkAnnotation("error", "**ready** failed: ready: server not ready in time")
	checkLastLines(t, o, tailLines, "+++ :x: e2e-never-healthy: error", "ready failed: ready: server not ready in time", "after 2s")
	e.checkNoLeftovers()
}

func TestE2EBenchFailedRequests(t *testing.T) {
	t.Parallel()
	const name = "e2e-failed-requests"
	e := newE2E(t, name, tinyRecipe(name, 1))
	// After four requests the server answers 500 and /health 503, but
	// keeps running.
	e.setenv("FAKE_VLLM_UNHEALTHY_AFTER_REQUESTS", "4")
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 1)

	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "ok", "bench": "failed", "lm_eval": "not-run", "gate": "ok"})
	invalid := regexp.MustCompile(`incomplete benchmark run: completed [0-7] of 8 prompts, [1-8] requests failed`)
	if len(s.Bench) != 1 || s.Bench[0].Status != summary.StatusFailed || !invalid.MatchString(s.Bench[0].Error) {
		t.Fatalf("summary bench = %+v, want the run failed as incomplete", s.Bench)
	}
	// vLLM's own result file is kept, and shows the failures.
	m := benchJSON(t, e.results("bench", "bench-short.json"))
	if m["completed"] == 8.0 || m["failed"] == 0.0 {
		t.Errorf("bench-short.json completed %v, failed %v; want failures", m["completed"], m["failed"])
	}
	if why := phaseError(s, "lm_eval"); !strings.Contains(why, "server not serving") || !strings.Contains(why, "503") {
		t.Errorf("lm_eval skipped for %q, want the unhealthy server", why)
	}
	e.checkUploaded("summary.json", "server.log", "bench/bench-short.json", "bench-short.log")
	e.checkAnnotation("error", "**bench** failed", "requests failed")
	checkLastLines(t, o, tailLines, "+++ :x: e2e-failed-requests: error", "bench failed: short: repetition 1: incomplete benchmark run")
	e.checkNoLeftovers()
}

func TestE2ESIGTERMDuringBench(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		env   []string
		grace string
	}{
		{name: "server stops on SIGTERM", grace: "10s"},
		// The stand-in then ignores SIGTERM in bench and serve alike:
		// only the escalation to SIGKILL ends them.
		{name: "server ignores SIGTERM", env: []string{"FAKE_VLLM_IGNORE_SIGTERM", "true"}, grace: "1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const name = "e2e-sigterm"
			e := newE2E(t, name, tinyRecipe(name, 1))
			// Slow tokens keep the bench running for a while.
			e.setenv("FAKE_VLLM_TOKEN_DELAY", "300ms")
			e.setenv(tt.env...)
			r := e.start("--health-timeout", "5m", "--grace", tt.grace)
			// Wait for the benchmark proper: a signal sent while the
			// stand-in is still starting would meet Go's default handler.
			e.waitFor("running vllm bench serve", r, func() bool {
				log, _ := os.ReadFile(e.results("bench-short.log"))
				return strings.Contains(string(log), "Starting main benchmark run") && e.findProc("vllm bench serve") != 0
			})
			if e.findProc("vllm serve", "--port "+strconv.Itoa(e.port)) == 0 {
				t.Fatal("no vllm serve process while the bench runs")
			}
			if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			// A bound only; BenchmarkFakeRun measures the time.
			o := r.waitWithin(30 * time.Second)
			checkCode(t, o, 143) // 128 + SIGTERM

			s := e.summary()
			checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "ok", "bench": "canceled", "lm_eval": "canceled", "gate": "canceled"})
			if s.Verdict != summary.VerdictError {
				t.Errorf("verdict = %q, want error", s.Verdict)
			}
			if err := phaseError(s, "bench"); !strings.Contains(err, "terminated") {
				t.Errorf("bench error = %q, want the signal named", err)
			}
			if why := phaseError(s, "lm_eval"); why != "canceled" {
				t.Errorf("lm_eval skipped for %q, want canceled", why)
			}
			// The bench entry the cancel cut short says so, not "failed".
			if len(s.Bench) != 1 || s.Bench[0].Status != summary.StatusCanceled {
				t.Errorf("bench entries %+v, want the one canceled", s.Bench)
			}
			if !slices.Contains(agentCommands(e.agentCalls()), "annotate") {
				t.Errorf("no annotation published after the cancel")
			}
			// Cleanup survives the cancel: what was done is published.
			e.checkUploaded("summary.json", "server.log", "bench-short.log", "annotation.md")
			// The headline says canceled, not only the details.
			e.checkAnnotation("error", ": error: canceled — **bench** canceled")
			checkLastLines(t, o, tailLines, "+++ :x: e2e-sigterm: error: canceled (received terminated)", "bench canceled: short: repetition 1")
			if s.Canceled != "received terminated" || s.Failure != nil {
				t.Errorf("canceled = %q, failure %+v; want the signal and no class", s.Canceled, s.Failure)
			}
			log, _ := os.ReadFile(e.results("server.log"))
			if tt.env == nil {
				if !strings.Contains(string(log), "Shutting down") {
					t.Errorf("server.log does not show a graceful shutdown")
				}
				if strings.Contains(o.stdout, "killed by signal") {
					t.Errorf("a process was killed although all stop on SIGTERM:\n%s", o.stdout)
				}
			} else {
				if strings.Contains(string(log), "Shutting down") {
					t.Errorf("server.log shows a graceful shutdown from a server ignoring SIGTERM")
				}
				if !strings.Contains(o.stdout, "runner: server stopped: vllm killed by signal 9") {
					t.Errorf("the log does not say the server was killed:\n%s", o.stdout)
				}
				if err := phaseError(s, "bench"); !strings.Contains(err, "killed by signal 9") {
					t.Errorf("bench error = %q, want the bench killed", err)
				}
			}
			e.checkNoLeftovers()
		})
	}
}

// Names and numbers of the seed gate drill.
const (
	seedName     = "minimax_m3-mi355x"
	nospecName   = "minimax_m3-nospec-mi355x"
	seedBaseline = 0.91
	nospecBuild  = 41
	nospecJob    = "0190a000-0000-4000-8000-000000000041"
	apiToken     = "bk-api-token-for-tests"
)

// smallSeedRecipe is the shipped seed recipe with its benchmark made tiny.
// Its gates are the shipped ones; the test checks they still have the
// shape it demonstrates.
func smallSeedRecipe(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(seedRecipe)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	// The stand-in's default context is 32k; the checkpoint's is larger,
	// and the task's max_length of 40960 relies on that.
	serveArgs := mapValue(t, mapValue(t, root, "vllm"), "serve_args")
	serveArgs.Value += " --max-model-len 40960"
	for _, c := range mapValue(t, mapValue(t, root, "vllm_bench"), "configs").Content {
		for key, v := range map[string]string{"input_len": "16", "output_len": "8", "num_prompts": "8", "max_concurrency": "2"} {
			mapValue(t, c, key).Value = v
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "seed.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	res := workloadstest.Resolve(t, path, nil)
	want := workloads.Expectation{Metric: "exact_match,flexible-extract", BaselineFrom: nospecName, Tolerance: 0.015, Alpha: workloads.DefaultAlpha}
	if res.Recipe.Name != seedName || len(res.Tasks) != 1 || len(res.Tasks[0].Expect) != 1 {
		t.Fatalf("the seed recipe changed shape: %s with tasks %+v", res.Recipe.Name, res.Tasks)
	}
	got := res.Tasks[0].Expect[0]
	got.Line = 0
	if diff := cmp.Diff(got, want); diff != "" {
		t.Fatalf("the seed recipe's gsm8k gate changed; diff (-got +want):\n%s", diff)
	}
	return string(out)
}

func mapValue(t *testing.T, m *yaml.Node, key string) *yaml.Node {
	t.Helper()
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	t.Fatalf("the seed recipe has no %q at line %d", key, m.Line)
	return nil
}

// nospecAPI is a Buildkite API holding one passed scheduled build of the
// no-spec recipe, with its gsm8k score in the uploaded summary.
func nospecAPI(t *testing.T) *bkapitest.Server {
	t.Helper()
	srv := bkapitest.NewServer(t, "benchkite", "benchkite-nightly", apiToken)
	srv.AddBuild(bkapitest.Build{
		Number:     nospecBuild,
		FinishedAt: time.Date(2026, 2, 11, 4, 0, 0, 0, time.UTC),
		Jobs:       []bkapitest.Job{{ID: nospecJob, StepKey: contract.StepKey(nospecName)}},
	})
	night := baselinetest.Encode(t, summary.Summary{
		SchemaVersion: summary.SchemaVersion,
		Recipe:        nospecName,
		GPU:           "MI355X",
		NumGPUs:       8,
		Model:         "MiniMaxAI/MiniMax-M3-MXFP8",
		Verdict:       summary.VerdictPass,
		Phases:        []summary.Phase{},
		Bench:         []summary.BenchRun{},
		Accuracy: []summary.TaskResult{{Task: "gsm8k", NumFewshot: 5, Status: summary.StatusOK,
			Metrics: map[string]float64{"exact_match,flexible-extract": seedBaseline, "exact_match,strict-match": seedBaseline - 0.02}}},
		Gates: []summary.GateResult{},
	})
	srv.AddArtifact(nospecBuild, bkapitest.Artifact{JobID: nospecJob, Path: contract.SummaryPath(nospecName), Content: night})
	return srv
}

// TestE2ESeedGate runs the seed recipe's correctness gate on the
// stand-in server: gsm8k with EAGLE3 must score within 0.015 of the
// no-spec recipe's last passing night. The nights come as the build runs
// them: `runner history` on the CPU step fetches them through the API and
// writes the history file; the GPU job reads that file and, although a
// token and the API are right there, makes no API request and asks for no
// secret.
func TestE2ESeedGate(t *testing.T) {
	t.Parallel()
	const flexibleMetric = "exact_match,flexible-extract"
	recipe := smallSeedRecipe(t)
	tests := []struct {
		name     string
		accuracy string
		token    []string // the API token in the history step's env
		secret   string   // the API token as the Buildkite secret BENCHKITE_API_TOKEN
		code     int
		verdict  string // of the gsm8k gate
		phase    string // status of the gate phase
		// annotation style and content
		style string
		notes []string
	}{
		{
			name: "pass within tolerance", accuracy: "0.9", token: []string{"BUILDKITE_API_TOKEN", apiToken},
			code: 0, verdict: summary.VerdictPass, phase: "ok",
			// The seed's bench regression gate has no past nights of its own
			// here: a new recipe passes on its other gates and says
			// "first nights: no regression check yet"; it is not soft-failed.
			style: "success", notes: []string{"### ✅ `minimax_m3-mi355x`: pass", "| ✅ pass | accuracy | gsm8k | `exact_match,flexible-extract` |", "first nights: no regression check yet"},
		},
		{
			name: "fail below tolerance", accuracy: "0.8", secret: apiToken,
			code: 1, verdict: summary.VerdictFail, phase: "failed",
			style: "error", notes: []string{"### ❌ `minimax_m3-mi355x`: fail", "| ❌ fail | accuracy | gsm8k | `exact_match,flexible-extract` |"},
		},
		{
			name: "history step without a token", accuracy: "0.9",
			code: contract.ExitUnverified, verdict: summary.VerdictNoBaseline, phase: "ok",
			style: "warning", notes: []string{"| ⚠️ no-baseline | accuracy | gsm8k |", "unverified — 3 checks could not be made", "no Buildkite API token"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			api := nospecAPI(t)
			e := newE2E(t, seedName, recipe)
			e.setenv("FAKE_VLLM_ACCURACY", tt.accuracy, "FAKE_LMEVAL_DOCS", "50",
				"BENCHKITE_API_URL", api.URL, "BUILDKITE_ORGANIZATION_SLUG", api.Org, "BUILDKITE_PIPELINE_SLUG", api.Pipeline)
			token := tt.token
			if tt.secret != "" {
				e.secrets(map[string]string{"BENCHKITE_API_TOKEN": tt.secret})
				token = []string{}
			}
			histFile := e.history(token, contract.Need{Recipe: seedName, Nights: 10}, contract.Need{Recipe: nospecName, Nights: 1})
			fetched := len(api.Requests())

			// The GPU job: a token in its env and in the secret store, the
			// API on loopback, and the history file handed to it.
			e.setenv("BUILDKITE_API_TOKEN", apiToken)
			e.secrets(map[string]string{"BENCHKITE_API_TOKEN": apiToken})
			o := e.run("--health-timeout", "5m", "--baselines", histFile)
			checkCode(t, o, tt.code)
			if got := api.Requests()[fetched:]; len(got) != 0 {
				t.Errorf("the GPU job made %d API request(s): %+v", len(got), got)
			}
			for _, c := range agentCommands(e.agentCalls()) {
				if c == "secret get" {
					t.Errorf("the GPU job ran buildkite-agent secret get")
				}
			}

			s := e.summary()
			if s.Phase("gate") == nil || s.Phase("gate").Status != tt.phase {
				t.Errorf("gate phase = %+v, want %s", s.Phase("gate"), tt.phase)
			}
			var gate *summary.GateResult
			for i, g := range s.Gates {
				if g.Kind == summary.GateAccuracy && g.Subject == "gsm8k" && g.Metric == flexibleMetric {
					gate = &s.Gates[i]
				}
			}
			if gate == nil {
				t.Fatalf("no gsm8k gate in %+v", s.Gates)
			}
			if gate.Verdict != tt.verdict {
				t.Errorf("gsm8k gate = %+v, want verdict %s", gate, tt.verdict)
			}
			if len(s.Accuracy) != 1 || s.Accuracy[0].Status != summary.StatusOK {
				t.Fatalf("summary accuracy = %+v, want gsm8k scored", s.Accuracy)
			}
			score := s.Accuracy[0].Metrics[flexibleMetric]
			if gate.Value == nil || *gate.Value != score {
				t.Errorf("gate judged %v, the task scored %v", gate.Value, score)
			}
			// The case's premise: the stand-in's score lands on the
			// intended side of the bound.
			if within := score >= seedBaseline-0.015; within != (tt.accuracy == "0.9") {
				t.Fatalf("FAKE_VLLM_ACCURACY=%s scored %.4f; the case needs it on the other side of %.4f", tt.accuracy, score, seedBaseline-0.015)
			}
			if tt.verdict != summary.VerdictNoBaseline && (gate.Baseline == nil || *gate.Baseline != seedBaseline) {
				t.Errorf("gate baseline = %v, want %v", gate.Baseline, seedBaseline)
			}
			// The regression gate has no past nights here: first nights
			// pass; without a history at all, the run is unverified.
			wantVerdict := summary.VerdictUnverified
			switch tt.verdict {
			case summary.VerdictFail, summary.VerdictPass:
				wantVerdict = tt.verdict
			}
			if s.Verdict != wantVerdict {
				t.Errorf("run verdict = %q, want %q", s.Verdict, wantVerdict)
			}
			notes := tt.notes
			switch tt.verdict {
			case summary.VerdictPass:
				notes = append(notes, "| 0.9100 | "+strings.Replace(fmt.Sprintf("%+.4f", score-seedBaseline), "-", "−", 1)+" (")
			case summary.VerdictFail:
				notes = append(notes, "| 0.9100 | ❌ "+strings.Replace(fmt.Sprintf("%+.4f", score-seedBaseline), "-", "−", 1)+" (")
			}
			e.checkAnnotation(tt.style, notes...)

			downloads := 0
			for _, r := range api.Requests() {
				if r.Storage {
					downloads++
				} else if r.Authorization != "Bearer "+apiToken {
					t.Errorf("API request %s %s with Authorization %q", r.Method, r.Path, r.Authorization)
				}
			}
			switch {
			case token == nil && len(api.Requests()) > 0:
				t.Errorf("without a token the history step still called the API: %+v", api.Requests())
			case token != nil && downloads == 0:
				t.Errorf("the history step never downloaded the no-spec summary: %+v", api.Requests())
			}

			switch tt.verdict {
			case summary.VerdictFail:
				checkLastLines(t, o, tailLines, "+++ :x: minimax_m3-mi355x: fail",
					fmt.Sprintf("gate failed: gsm8k exact_match,flexible-extract = %.4f vs minimax_m3-nospec-mi355x #41 0.9100 (Δ %+.4f, tolerance 0.015)", score, score-seedBaseline))
			case summary.VerdictNoBaseline:
				if !strings.Contains(o.stdout, "⚠️ gsm8k exact_match,flexible-extract = 0.9000: no baseline from minimax_m3-nospec-mi355x") {
					t.Errorf("the log does not warn about the missing baseline:\n%s", o.stdout)
				}
				checkLastLines(t, o, tailLines, "+++ :warning: minimax_m3-mi355x: unverified", "not verified: gsm8k exact_match,flexible-extract = 0.9000: no baseline from minimax_m3-nospec-mi355x")
			default:
				checkLastLines(t, o, tailLines, "+++ :white_check_mark: minimax_m3-mi355x passed")
				if !strings.Contains(o.stdout, "8k-in-1k-out-conc-128 output_throughput = ") || !strings.Contains(o.stdout, "first nights: no regression check yet (0 past nights, 5 needed)") {
					t.Errorf("the log does not say the regression check waits for nights:\n%s", o.stdout)
				}
			}
			e.checkNoLeftovers()
		})
	}
}

// history runs `runner history` as the build's CPU step does, with the
// token given by tokenEnv (none when nil), through its own stand-in agent
// log, and returns the history file's path relative to the job's directory.
func (e *e2e) history(tokenEnv []string, needs ...contract.Need) string {
	e.t.Helper()
	env := map[string]string{}
	for k, v := range e.env {
		env[k] = v
	}
	env["FAKE_AGENT_LOG"] = filepath.Join(e.dir, "agent/history-log.jsonl")
	env[contract.HistoryEnv] = contract.EncodeNeeds(needs)
	for i := 0; i+1 < len(tokenEnv); i += 2 {
		env[tokenEnv[i]] = tokenEnv[i+1]
	}
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	cmd := exec.Command(e.bin, "history")
	cmd.Dir = e.dir
	cmd.Env = environ
	out, err := cmd.CombinedOutput()
	e.read.addText(string(out))
	if tokenEnv != nil && err != nil {
		e.t.Fatalf("runner history: %v\n%s", err, out)
	}
	if tokenEnv == nil && err == nil {
		e.t.Errorf("runner history without a token passed; it must fail so the missing token shows:\n%s", out)
	}
	if strings.Contains(string(out), apiToken) {
		e.t.Errorf("runner history printed the token:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(e.dir, contract.HistoryArtifact)); err != nil {
		e.t.Fatalf("runner history wrote no %s: %v\n%s", contract.HistoryArtifact, err, out)
	}
	return contract.HistoryArtifact
}

// TestE2EAttachedServer: with --base-url the runner uses a server that is
// already up, starts none and leaves it running. Inside a Buildkite job
// that run is at most unverified: the job did not start what it measured.
func TestE2EAttachedServer(t *testing.T) {
	t.Parallel()
	const name = "e2e-attached"
	srv := openai.NewServer(openai.Config{Model: "benchkite/tiny-model", Accuracy: 1})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() {
		cancel()
		srv.Close()
	})
	if err := srv.Start(ctx, "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	e := newE2E(t, name, tinyRecipe(name, 1))
	o := e.run("--base-url", srv.URL()+"/", "--health-timeout", "1m")
	checkCode(t, o, contract.ExitUnverified)

	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "skipped", "ready": "ok", "bench": "ok", "lm_eval": "ok", "gate": "ok"})
	if why := phaseError(s, "serve"); why != "attached to "+srv.URL() {
		t.Errorf("serve skipped for %q, want attached to %s", why, srv.URL())
	}
	if starts := e.serverStarts(); len(starts) != 0 {
		t.Errorf("vllm serve started %d times, want none", len(starts))
	}
	if fileExists(e.results("server.log")) {
		t.Errorf("server.log written without a server of its own")
	}
	if !strings.Contains(o.stdout, "--base-url "+srv.URL()+" ") {
		t.Errorf("the bench did not use the attached server:\n%s", o.stdout)
	}
	if st := srv.Stats(); st.Requests == 0 {
		t.Errorf("the attached server got no generation requests")
	}
	select {
	case <-srv.Done():
		t.Fatal("the attached server was stopped")
	default:
	}
	resp, err := http.Get(srv.URL() + "/health")
	if err != nil {
		t.Fatalf("the attached server no longer answers: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("attached server /health = %d after the run", resp.StatusCode)
	}
	// lm_eval's samples reduced to the compact per-question file.
	e.checkUploaded("gsm8k/" + baseline.OutcomesFile)
	if o, err := baseline.ReadOutcomesFile(e.results("gsm8k", baseline.OutcomesFile)); err != nil || len(o.DocHashes) != 10 {
		t.Errorf("outcomes file: %d documents, %v; want 10", len(o.DocHashes), err)
	}
	if s.Verdict != summary.VerdictUnverified || s.Attached != srv.URL() {
		t.Errorf("verdict %q, attached %q; want unverified, attached to %s", s.Verdict, s.Attached, srv.URL())
	}
	if !slices.ContainsFunc(s.Problems, func(p string) bool { return strings.Contains(p, "a server this job did not start") }) {
		t.Errorf("problems %q do not say the server was not the job's", s.Problems)
	}
	e.checkAnnotation("warning", "`e2e-attached`: unverified", "measured the attached server `"+srv.URL()+"`")
	e.checkNoLeftovers()
}

// TestE2EAttachOnlyByFlag: BENCHKITE_BASE_URL left in a build's or an
// agent's environment does not skip serving: the job starts and measures
// its own server, and says the variable was ignored.
func TestE2EAttachOnlyByFlag(t *testing.T) {
	t.Parallel()
	const name = "e2e-attach-env"
	e := newE2E(t, name, tinyRecipe(name, 1))
	e.setenv("BENCHKITE_BASE_URL", "http://127.0.0.1:1")
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 0)
	if starts := e.serverStarts(); len(starts) != 1 {
		t.Errorf("vllm serve started %d times, want 1", len(starts))
	}
	if s := e.summary(); s.Attached != "" || s.Verdict != summary.VerdictPass {
		t.Errorf("attached %q, verdict %q; want its own server and pass", s.Attached, s.Verdict)
	}
	if !strings.Contains(o.stderr, "BENCHKITE_BASE_URL=http://127.0.0.1:1 is ignored") {
		t.Errorf("stderr does not say the variable was ignored:\n%s", o.stderr)
	}
	e.checkNoLeftovers()
}

// TestE2ERunnerKilled: a runner killed outright (SIGKILL, as after
// Buildkite's cancel grace period) runs no cleanup, yet leaves nothing
// behind: its children die with it. The scan first sees them alive, so
// the leftover check is not vacuous.
func TestE2ERunnerKilled(t *testing.T) {
	t.Parallel()
	const name = "e2e-sigkill"
	e := newE2E(t, name, tinyRecipe(name, 1))
	e.setenv("FAKE_VLLM_TOKEN_DELAY", "300ms")
	r := e.start("--health-timeout", "5m")
	e.waitFor("running vllm bench serve", r, func() bool { return e.findProc("vllm bench serve") != 0 })
	if e.findProc("vllm serve", "--port "+strconv.Itoa(e.port)) == 0 {
		t.Fatalf("the scan finds no server among %+v", e.descendants())
	}
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-r.done
	e.checkNoLeftovers()
}

// A sweep runs lowest concurrency first; when that canary point fails
// with the server still serving, the config's heavier points are not
// run, each says why, and the GPU time saved is in the log and summary.
func TestE2ECanaryFirst(t *testing.T) {
	t.Parallel()
	const name = "e2e-canary"
	recipe := strings.Replace(tinyRecipe(name, 1), "      max_concurrency: 2\n", "      max_concurrency: [4, 1, 2]\n", 1)
	e := newE2E(t, name, recipe)
	// Every bench exits without its result file: the canary fails, the
	// server stays healthy.
	e.setenv("FAKE_VLLM_BENCH_NO_OUTPUT", "true")
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 1)

	s := e.summary()
	var got []string
	for _, b := range s.Bench {
		got = append(got, fmt.Sprintf("%s %s", b.Name, b.Status))
	}
	want := []string{"short-conc-1 failed", "short-conc-2 not-run", "short-conc-4 not-run"}
	if !slices.Equal(got, want) {
		t.Fatalf("bench runs = %q, want %q", got, want)
	}
	for _, b := range s.Bench[1:] {
		if !strings.HasPrefix(b.Error, "canary short-conc-1 failed: ") {
			t.Errorf("%s: error %q, want the canary named", b.Name, b.Error)
		}
	}
	if s.GPUTime == nil || s.GPUTime.Saved <= 0 {
		t.Errorf("gpu_time = %+v, want GPU time saved", s.GPUTime)
	}
	if !strings.Contains(o.stdout, "runner: short-conc-4 not run: canary short-conc-1 failed: ") || !strings.Contains(o.stdout, "GPU-h saved") {
		t.Errorf("the log does not say the sweep stopped and what it saved:\n%s", o.stdout)
	}
	// The canary ran once: the vLLM stand-in's argv log would show more.
	if n := strings.Count(o.stdout, "$ vllm bench serve"); n != 1 {
		t.Errorf("vllm bench serve ran %d times, want once", n)
	}
}
