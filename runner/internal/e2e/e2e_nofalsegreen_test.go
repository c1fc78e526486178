package e2e

// No false green: runs that lost a result, met the wrong server, read
// stale files or could not check something must not pass. Each case runs
// the runner binary against the stand-ins and checks the exit status, the
// verdict, the failing phase, the annotation style and the end of the log.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/openai"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// withExpect gates the tiny recipe's gsm8k score with the YAML lines of
// an expect block.
func withExpect(recipe, expect string) string {
	return strings.Replace(recipe, "        max_gen_toks: 64\n", "        max_gen_toks: 64\n      expect:\n"+expect, 1)
}

// withBenchYAML adds lines to the tiny recipe's bench config.
func withBenchYAML(recipe, lines string) string {
	return strings.Replace(recipe, "      repetitions: 1\n", "      repetitions: 1\n"+lines, 1)
}

// withServeArgs adds serve_args to the tiny recipe.
func withServeArgs(recipe, args string) string {
	return strings.Replace(recipe, "  model: benchkite/tiny-model\n", "  model: benchkite/tiny-model\n  serve_args: "+args+"\n", 1)
}

const (
	minHalf       = "        metric: exact_match,flexible-extract\n        min: 0.5\n"
	fromElsewhere = "        metric: exact_match,flexible-extract\n        baseline_from: other-mi355x\n        tolerance: 0.01\n"
	speculate     = "--speculative-config.method eagle3 --speculative-config.model benchkite/tiny-draft --speculative-config.num_speculative_tokens 2"
)

// holdPort serves a healthy OpenAI server for the recipe's model on the
// run's port from the test process: a leftover server from an earlier job.
func holdPort(t *testing.T, e *e2e) {
	t.Helper()
	srv := openai.NewServer(openai.Config{Model: "benchkite/tiny-model", ServedModelNames: []string{"benchkite/tiny-model"}, MaxModelLen: openai.DefaultMaxModelLen, Accuracy: 1})
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(e.port))); err != nil {
		cancel()
		t.Fatalf("hold port %d: %v", e.port, err)
	}
	t.Cleanup(func() { cancel(); srv.Close() })
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/health", e.port))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the leftover server does not answer /health: %v", err)
	}
	resp.Body.Close()
}

func TestE2ENoFalseGreen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		recipe func(name string) string
		env    []string
		// setup runs before the run, after the environment is set.
		setup func(t *testing.T, e *e2e)
		args  []string

		code    int
		verdict string
		phase   string // the phase that fails ("" when none)
		status  string // its status
		style   string
		notes   []string // in the annotation
		tail    []string // in the last lines of the log
		check   func(t *testing.T, e *e2e, s summary.Summary, o outcome)
	}{
		{
			name:   "server lost between bench and lm_eval",
			recipe: func(n string) string { return withExpect(tinyRecipe(n, 1), minHalf) },
			setup: func(t *testing.T, e *e2e) {
				pid := filepath.Join(e.dir, "server.pid")
				e.setenv("FAKE_VLLM_PID_FILE", pid, "FAKE_VLLM_BENCH_KILL_PIDFILE", pid)
			},
			code: 1, verdict: summary.VerdictError, phase: "lm_eval", status: summary.StatusNotRun, style: "error",
			notes: []string{"**lm_eval** not-run: server exited", "1 gate not judged: nothing was measured"},
			tail:  []string{"lm_eval not-run: server exited", "gate error: gsm8k exact_match,flexible-extract: not measured: the task did not run"},
		},
		{
			name:   "NaN score",
			recipe: func(n string) string { return withExpect(tinyRecipe(n, 1), minHalf) },
			env:    []string{"FAKE_LMEVAL_SCORE", "nan"},
			code:   1, verdict: summary.VerdictError, phase: "lm_eval", status: summary.StatusFailed, style: "error",
			notes: []string{`key "exact_match,flexible-extract" of task "gsm8k" is NaN`},
			tail:  []string{"lm_eval failed: gsm8k: ", `/gsm8k/`, `key "exact_match,flexible-extract" of task "gsm8k" is NaN, not a number`},
		},
		{
			name:   "infinite score",
			recipe: func(n string) string { return withExpect(tinyRecipe(n, 1), minHalf) },
			env:    []string{"FAKE_LMEVAL_SCORE", "inf"},
			code:   1, verdict: summary.VerdictError, phase: "lm_eval", status: summary.StatusFailed, style: "error",
			tail: []string{`key "exact_match,flexible-extract" of task "gsm8k" is Infinity, not a number`},
		},
		{
			name:   "score written as a string",
			recipe: func(n string) string { return withExpect(tinyRecipe(n, 1), minHalf) },
			env:    []string{"FAKE_LMEVAL_SCORE", "string:0.93"},
			code:   1, verdict: summary.VerdictError, phase: "lm_eval", status: summary.StatusFailed, style: "error",
			tail: []string{`key "exact_match,flexible-extract" of task "gsm8k" is the string "0.93", not a number`},
		},
		{
			name:   "gated metric missing from lm_eval's results",
			recipe: func(n string) string { return withExpect(tinyRecipe(n, 1), minHalf) },
			env:    []string{"FAKE_LMEVAL_SCORE", "missing"},
			code:   1, verdict: summary.VerdictError, phase: "lm_eval", status: summary.StatusFailed, style: "error",
			tail: []string{`results_`, `.json: no key "exact_match,flexible-extract" for task "gsm8k"`},
		},
		{
			// A server running model code writes a perfect score where
			// lm_eval writes: a newer-named results file (and samples) in
			// every folder it can reach. Only lm_eval's own file counts,
			// and two results files for one run are an error.
			name:   "a results file planted by the server is not taken",
			recipe: func(n string) string { return withExpect(tinyRecipe(n, 1), minHalf) },
			setup: func(t *testing.T, e *e2e) {
				from := filepath.Join(e.dir, "plant")
				if err := os.MkdirAll(from, 0o755); err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile("../results/testdata/lm_eval_v0.4.9.json")
				if err != nil {
					t.Fatal(err)
				}
				for name, content := range map[string][]byte{
					"results_2099-01-01T00-00-00.000000.json":        data,
					"samples_gsm8k_2099-01-01T00-00-00.000000.jsonl": []byte("{}\n"),
				} {
					if err := os.WriteFile(filepath.Join(from, name), content, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				e.setenv("FAKE_VLLM_PLANT_FROM", from, "FAKE_VLLM_PLANT_INTO", e.results("gsm8k"))
			},
			// Slow answers: the server plants while lm_eval runs (or before
			// it starts, into its fresh folder: refused too).
			env:  []string{"FAKE_VLLM_ACCURACY", "0", "FAKE_VLLM_TOKEN_DELAY", "20ms"},
			code: 1, verdict: summary.VerdictError, phase: "lm_eval", status: summary.StatusFailed, style: "error",
			tail: []string{"lm_eval failed: gsm8k: ", "not the child's own result", "results_2099-01-01T00-00-00.000000.json"},
		},
		{
			// A native server rewrites lm_eval's own results file in
			// place, after lm_eval wrote it and before it exits, and puts
			// its modification time back: the file is lm_eval's, in its
			// folder, written during its run, but the score is not what
			// lm_eval printed on its stdout.
			name:   "a results file the server rewrites in place is not taken",
			recipe: func(n string) string { return withExpect(tinyRecipe(n, 1), minHalf) },
			setup: func(t *testing.T, e *e2e) {
				e.setenv("FAKE_VLLM_REWRITE_INTO", e.results("gsm8k"), "FAKE_VLLM_REWRITE_SCORE", "0.93")
			},
			env:  []string{"FAKE_VLLM_ACCURACY", "0", "FAKE_LMEVAL_EXIT_DELAY", "500ms"},
			code: 1, verdict: summary.VerdictError, phase: "lm_eval", status: summary.StatusFailed, style: "error",
			tail: []string{"lm_eval failed: gsm8k: ", "not the child's own result", "exact_match,flexible-extract = 0.9300, lm_eval printed 0"},
		},
		{
			// The same server writes a bench result of its own where the
			// bench writes (here the bench writes none): the file must say
			// what the bench printed on its own stdout, and does not.
			name:   "a bench result planted by the server is not taken",
			recipe: func(n string) string { return tinyRecipe(n, 1) },
			setup: func(t *testing.T, e *e2e) {
				from := filepath.Join(e.dir, "plant")
				if err := os.MkdirAll(from, 0o755); err != nil {
					t.Fatal(err)
				}
				data, err := os.ReadFile("../results/testdata/bench_v0.11_no_failed.json")
				if err != nil {
					t.Fatal(err)
				}
				var m map[string]any
				if err := json.Unmarshal(bytes.ReplaceAll(data, []byte("NaN"), []byte("0")), &m); err != nil {
					t.Fatal(err)
				}
				m["completed"], m["num_prompts"], m["failed"], m["output_throughput"] = 8, 8, 0, 99999.0
				if data, err = json.Marshal(m); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(from, "bench-short.json"), data, 0o644); err != nil {
					t.Fatal(err)
				}
				e.setenv("FAKE_VLLM_PLANT_FROM", from, "FAKE_VLLM_PLANT_INTO", e.results())
			},
			// Slow answers: the server plants while the bench runs.
			env:  []string{"FAKE_VLLM_TOKEN_DELAY", "50ms", "FAKE_VLLM_BENCH_NO_OUTPUT", "true"},
			code: 1, verdict: summary.VerdictError, phase: "bench", status: summary.StatusFailed, style: "error",
			tail: []string{"bench failed: short: repetition 1: bench-short.json: not the child's own result: the result file says 8 requests at 99999.00 output tok/s, the bench printed 8 at "},
		},
		{
			name:   "a zero score fails whatever the baseline",
			recipe: func(n string) string { return withExpect(tinyRecipe(n, 1), fromElsewhere) },
			env:    []string{"FAKE_VLLM_ACCURACY", "0"},
			code:   1, verdict: summary.VerdictFail, phase: "gate", status: summary.StatusFailed, style: "error",
			notes: []string{"at or below the floor 0"},
			tail:  []string{"gate failed: gsm8k exact_match,flexible-extract = 0.0000, at or below the floor 0"},
		},
		{
			name:   "no baseline: unverified, soft-failed",
			recipe: func(n string) string { return withExpect(tinyRecipe(n, 1), fromElsewhere) },
			code:   contract.ExitUnverified, verdict: summary.VerdictUnverified, style: "warning",
			notes: []string{"### ⚠️ `e2e-nfg-", "`: unverified", "could not be", "no baseline from other-mi355x"},
			tail:  []string{"unverified", "not verified: gsm8k exact_match,flexible-extract = 1.0000: no baseline from other-mi355x"},
		},
		{
			name:   "speculation configured, none reported: unverified",
			recipe: func(n string) string { return withServeArgs(tinyRecipe(n, 1), speculate) },
			env:    []string{"FAKE_VLLM_NO_SPECULATION", "true"},
			code:   contract.ExitUnverified, verdict: summary.VerdictUnverified, style: "warning",
			notes: []string{"could not be", "speculative decoding is configured but bench/bench-short.json reports no acceptance metrics"},
			tail:  []string{"not verified: short: speculative decoding is configured but bench/bench-short.json reports no acceptance metrics"},
		},
		{
			name:   "speculation configured and reported: pass",
			recipe: func(n string) string { return withServeArgs(tinyRecipe(n, 1), speculate) },
			code:   0, verdict: summary.VerdictPass, style: "success",
			notes: []string{"| ✅ pass | spec_decode | short |"},
			tail:  []string{"passed"},
		},
		{
			name:   "a leftover server already holds the port",
			recipe: func(n string) string { return tinyRecipe(n, 1) },
			setup:  holdPort,
			code:   1, verdict: summary.VerdictError, phase: "serve", status: summary.StatusFailed, style: "error",
			notes: []string{"**serve** failed: port already in use"},
			tail:  []string{"serve failed: port already in use: port ", fmt.Sprintf("is held by pid %d (", os.Getpid())},
			check: func(t *testing.T, e *e2e, s summary.Summary, o outcome) {
				if starts := e.serverStarts(); len(starts) != 0 {
					t.Errorf("vllm serve started %d times, want none while the port is held", len(starts))
				}
				if len(s.Bench) != 0 || len(s.Accuracy) != 0 {
					t.Errorf("the run measured someone else's server: bench %+v, accuracy %+v", s.Bench, s.Accuracy)
				}
			},
		},
		{
			name:   "a second run whose tools write nothing does not reuse the first run's files",
			recipe: func(n string) string { return tinyRecipe(n, 1) },
			setup: func(t *testing.T, e *e2e) {
				if o := e.run("--health-timeout", "5m"); o.code != 0 {
					t.Fatalf("first run exit code %d:\n%s", o.code, o.stdout)
				}
				// Only what the second run uploads counts.
				if err := os.RemoveAll(filepath.Join(e.dir, agentArtifacts)); err != nil {
					t.Fatal(err)
				}
				e.setenv("FAKE_VLLM_BENCH_NO_OUTPUT", "true", "FAKE_LMEVAL_NO_OUTPUT", "true")
			},
			code: 1, verdict: summary.VerdictError, phase: "bench", status: summary.StatusFailed, style: "error",
			tail: []string{"bench failed: short: repetition 1: ", "bench-short.json", "lm_eval failed: gsm8k: find lm_eval results"},
			check: func(t *testing.T, e *e2e, s summary.Summary, o outcome) {
				if !strings.Contains(o.stdout, " entries of an earlier run; moved them to "+filepath.Join("results", e.recipe)+".old-") {
					t.Errorf("the log does not say the earlier results were moved aside:\n%s", o.stdout)
				}
				old, _ := filepath.Glob(e.results() + ".old-*")
				if len(old) != 1 || !fileExists(filepath.Join(old[0], "bench", "bench-short.json")) {
					t.Errorf("earlier results at %q, want one directory holding them", old)
				}
				for _, f := range listFiles(t, filepath.Join(e.dir, agentArtifacts)) {
					if strings.HasSuffix(f, "bench-short.json") || strings.Contains(f, "results_") || strings.Contains(f, ".old-") {
						t.Errorf("uploaded %s, a file of the earlier run", f)
					}
				}
			},
		},
		{
			name:   "a results directory that cannot be written still posts an annotation",
			recipe: func(n string) string { return tinyRecipe(n, 1) },
			// /proc takes no new directory, whoever the runner runs as.
			args: []string{"--results", "/proc/benchkite-results"},
			code: 1, verdict: summary.VerdictError, style: "error",
			notes: []string{"create results directory"},
			tail:  []string{"+++ :x: ", "create results directory"},
			check: func(t *testing.T, e *e2e, s summary.Summary, o outcome) {
				if starts := e.serverStarts(); len(starts) != 0 {
					t.Errorf("vllm serve started without a results directory")
				}
			},
		},
		{
			name:   "an engine that left the server's process group dies with it",
			recipe: func(n string) string { return tinyRecipe(n, 1) },
			env:    []string{"FAKE_VLLM_ENGINE_ESCAPE", "group"},
			code:   0, verdict: summary.VerdictPass, style: "success",
			tail: []string{"passed"},
		},
		{
			name:   "an engine that left the server's session is ended at teardown",
			recipe: func(n string) string { return tinyRecipe(n, 1) },
			env:    []string{"FAKE_VLLM_ENGINE_ESCAPE", "session"},
			code:   0, verdict: summary.VerdictPass, style: "success",
			tail: []string{"passed"},
			check: func(t *testing.T, e *e2e, s summary.Summary, o outcome) {
				if !strings.Contains(o.stdout, "runner: ended 1 process(es) the server left behind") {
					t.Errorf("the log does not say the escaped engine was ended:\n%s", o.stdout)
				}
			},
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := "e2e-nfg-" + strconv.Itoa(i)
			e := newE2E(t, name, tt.recipe(name))
			e.setenv(tt.env...)
			if tt.setup != nil {
				tt.setup(t, e)
			}
			o := e.run(append([]string{"--health-timeout", "5m"}, tt.args...)...)
			checkCode(t, o, tt.code)
			var s summary.Summary
			if len(tt.args) == 0 {
				s = e.summary()
				if s.Verdict != tt.verdict {
					t.Errorf("verdict = %q, want %q; problems %q", s.Verdict, tt.verdict, s.Problems)
				}
				if tt.phase != "" {
					if p := s.Phase(tt.phase); p == nil || p.Status != tt.status {
						t.Errorf("phase %s = %+v, want %s", tt.phase, p, tt.status)
					}
				}
				if tt.verdict != summary.VerdictPass && len(s.Problems) == 0 && tt.verdict != summary.VerdictFail {
					t.Errorf("summary problems empty for a %s run", tt.verdict)
				}
			}
			e.checkAnnotation(tt.style, tt.notes...)
			checkLastLines(t, o, 8, tt.tail...)
			if tt.check != nil {
				tt.check(t, e, s, o)
			}
			e.checkNoLeftovers()
		})
	}
}

// A cancel delivered twice within milliseconds (GNU timeout, tini, a
// forwarding shell) is one cancel: the server gets its teardown, and the
// summary and annotation are published. A real second cancel, later,
// kills every process at once and still publishes what exists, also when
// it lands while the results are being uploaded: the upload finishes.
func TestE2ESecondSignal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		gap    time.Duration
		second bool
		// duringUpload sends the second signal once the artifact upload
		// has started, and gap after the first at the earliest.
		duringUpload bool
	}{
		{name: "doubled", gap: 30 * time.Millisecond},
		{name: "second-cancel", gap: 2300 * time.Millisecond, second: true},
		{name: "second-cancel-during-upload", gap: 2300 * time.Millisecond, second: true, duringUpload: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := "e2e-signal-" + tt.name
			e := newE2E(t, name, tinyRecipe(name, 1))
			e.setenv("FAKE_VLLM_TOKEN_DELAY", "300ms", "FAKE_VLLM_IGNORE_SIGTERM", "true", "FAKE_VLLM_ENGINE_ESCAPE", "session")
			if tt.duringUpload {
				e.setenv("FAKE_AGENT_UPLOAD_DELAY", "1500ms")
			}
			r := e.start("--health-timeout", "5m", "--grace", "1m")
			e.waitFor("running vllm bench serve", r, func() bool {
				log, _ := os.ReadFile(e.results("bench-short.log"))
				return strings.Contains(string(log), "Starting main benchmark run")
			})
			if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if tt.second {
				// The repeat window runs from when the runner took the
				// first signal, which a loaded machine delays: the second
				// cancel goes past it by the runner's clock, not the test's.
				var first time.Time
				e.waitFor("the runner to take the cancel", r, func() bool {
					var ok bool
					first, ok = r.stderr.first("runner: terminated: cancelling")
					return ok
				})
				if tt.duringUpload {
					e.waitFor("the artifact upload", r, func() bool {
						return slices.Contains(agentCommands(e.agentCalls()), "artifact upload")
					})
				}
				time.Sleep(time.Until(first.Add(tt.gap)))
			} else {
				time.Sleep(tt.gap)
			}
			if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			o := r.waitWithin(30 * time.Second) // a bound only
			checkCode(t, o, 128+int(syscall.SIGTERM))
			said := strings.Contains(o.stderr, "runner: second cancel (terminated): killing every process")
			if said != tt.second {
				t.Errorf("stderr says a second cancel: %t, want %t:\n%s", said, tt.second, o.stderr)
			}
			if !tt.second && !strings.Contains(o.stderr, "again") {
				t.Errorf("stderr does not say the repeated signal was the same cancel:\n%s", o.stderr)
			}
			if s := e.summary(); s.Verdict != summary.VerdictError {
				t.Errorf("verdict = %q, want error", s.Verdict)
			}
			e.checkAnnotation("error", "canceled")
			e.checkUploaded("summary.json", "server.log")
			if tt.duringUpload && !strings.Contains(o.stdout, "Artifact uploads completed successfully") {
				t.Errorf("the upload did not complete:\n%s\n%s", lastLines(o.stdout, 30), o.stderr)
			}
			e.checkNoLeftovers()
		})
	}
}

// The cancel's worst case under the default grace: nothing stops on
// SIGTERM and an engine left the server's session. Everything still ends,
// and the summary and annotation are still published.
func TestE2ECancelWorstCase(t *testing.T) {
	t.Parallel()
	const name = "e2e-cancel-worst"
	e := newE2E(t, name, tinyRecipe(name, 1))
	e.setenv("FAKE_VLLM_TOKEN_DELAY", "300ms", "FAKE_VLLM_IGNORE_SIGTERM", "true", "FAKE_VLLM_ENGINE_ESCAPE", "session")
	r := e.start("--health-timeout", "5m")
	e.waitFor("running vllm bench serve", r, func() bool {
		log, _ := os.ReadFile(e.results("bench-short.log"))
		return strings.Contains(string(log), "Starting main benchmark run")
	})
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	o := r.waitWithin(30 * time.Second) // a bound only; BenchmarkFakeRun measures
	checkCode(t, o, 128+int(syscall.SIGTERM))
	if s := e.summary(); s.Verdict != summary.VerdictError {
		t.Errorf("verdict = %q, want error", s.Verdict)
	}
	e.checkAnnotation("error", "**bench** canceled")
	// The engine, and the server too when its SIGKILL had not landed yet.
	if !regexp.MustCompile(`runner: ended [12] process\(es\) the server left behind`).MatchString(o.stdout) {
		t.Errorf("the log does not say the escaped engine was ended:\n%s", o.stdout)
	}
	e.checkNoLeftovers()
}

// TestE2EAssertionOnAKeyVLLMNeverWrites: such a gate could never be
// judged, so the recipe does not load; nothing starts, and the error names
// the key and what it may have meant.
func TestE2EAssertionOnAKeyVLLMNeverWrites(t *testing.T) {
	t.Parallel()
	const name = "e2e-nfg-typo"
	e := newE2E(t, name, withBenchYAML(tinyRecipe(name, 1), "      assertions:\n        output_throughput_typo: {min: 1}\n"))
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 1)
	if !strings.Contains(o.stderr, "output_throughput_typo") || !strings.Contains(o.stderr, "output_throughput") || !strings.Contains(o.stderr, "recipe.yaml:") {
		t.Errorf("stderr does not name the file, the key and its close match:\n%s", o.stderr)
	}
	if _, err := os.Stat(e.results()); !os.IsNotExist(err) {
		t.Errorf("results directory exists (stat error %v): the job started", err)
	}
}
