package job

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/proc/proctest"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/tools"
	"github.com/benchkite/benchkite/workloads"
	"github.com/benchkite/benchkite/workloads/workloadstest"
	"github.com/google/go-cmp/cmp"
)

// A failed lm_eval's own last error line goes with the phase into the
// summary, and each task runs under the recipe's time limit.
func TestLMEvalCauseAndTimeLimit(t *testing.T) {
	t.Parallel()
	res := workloadstest.Resolve(t, "testdata/limits_recipe.yaml", nil)
	fake := proctest.New(t)
	var deadline time.Time
	start := time.Now()
	fake.Expect("lm_eval").Stderr(strings.Join([]string{
		"INFO Building contexts for gsm8k on rank 0...",
		"Traceback (most recent call last):",
		`  File "/venv/lib/python3.12/site-packages/lm_eval/api/model.py", line 412, in generate_until`,
		"    raise RuntimeError(msg)",
		"RuntimeError: Request to http://127.0.0.1:8000/v1/completions failed: 500 Internal Server Error",
		"",
	}, "\n")).Exit(1).Ctx(func(ctx context.Context) { deadline, _ = ctx.Deadline() })
	var log strings.Builder
	j := New(Config{ResultsDir: t.TempDir(), Tools: tools.ModePath}, res, Deps{Procs: fake, Log: &log, Getenv: mapGetenv(map[string]string{"PATH": "/usr/bin"})})
	if j.phase(context.Background(), summary.PhaseLMEval, j.lmeval) {
		t.Fatal("the lm_eval phase passed")
	}
	p := j.sum.Phase(summary.PhaseLMEval)
	want := "RuntimeError: Request to http://127.0.0.1:8000/v1/completions failed: 500 Internal Server Error"
	if p.Cause != want {
		t.Errorf("cause = %q, want %q", p.Cause, want)
	}
	if !strings.Contains(log.String(), "runner: lm_eval cause: "+want) {
		t.Errorf("the log does not show the cause:\n%s", log.String())
	}
	if limit := deadline.Sub(start); limit < 7*time.Minute-time.Second || limit > 7*time.Minute+time.Second {
		t.Errorf("lm_eval ran with a %s limit, want the recipe's 7m", limit)
	}
}

// The server's last words are a failed phase's cause only when the
// server ended on its own while the phase ran (here an OOM): once the
// runner has stopped it, its shutdown lines are no one's cause, and a
// failed gate is a verdict on the numbers, told by the gate itself.
func TestServerCauseOnlyWhenTheServerEnded(t *testing.T) {
	t.Parallel()
	type phaseCause struct{ Name, Status, Cause string }
	const (
		fatal = "(EngineCore_DP0 pid=4242) ERROR 02-01 02:13:07 [core.py:708] EngineCore encountered a fatal error."
		oom   = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 287.98 GiB of which 1.21 GiB is free."
	)
	serving := []string{"INFO:     Started server process [4242]", "INFO:     Application startup complete.",
		`INFO:     127.0.0.1:53124 - "POST /v1/completions HTTP/1.1" 200 OK`}
	// What vLLM prints when the runner's SIGTERM stops it.
	shutdown := []string{"INFO:     Shutting down", "INFO:     Waiting for application shutdown.",
		"INFO:     Application shutdown complete.", "INFO:     Finished server process [4242]"}
	benchFailed := errors.New("1k-in-1k-out-conc-64: repetition 1: vllm bench serve: exit status 1")
	tests := []struct {
		name     string
		printed  []string // what the server printed during the bench
		crash    bool     // the server exits by itself during the bench
		benchErr error
		score    float64 // gsm8k; below 0.8 fails the gate
		want     []phaseCause
		wantLog  []string // the log's cause lines
	}{
		{
			name: "regression gate failed after a clean run", printed: serving, score: 0.7,
			want: []phaseCause{{"ready", "ok", ""}, {"bench", "ok", ""}, {"gate", "failed", ""}},
		},
		{
			name: "server ran out of memory in the bench, gate failed", printed: append(slices.Clone(serving), fatal, oom), crash: true, benchErr: benchFailed, score: 0.7,
			want:    []phaseCause{{"ready", "ok", ""}, {"bench", "failed", fatal + "\n" + oom}, {"gate", "failed", ""}},
			wantLog: []string{"runner: bench cause: " + fatal + " ⏎ " + oom},
		},
		{
			name: "server ran out of memory in the bench, gate passed", printed: append(slices.Clone(serving), fatal, oom), crash: true, benchErr: benchFailed, score: 0.9,
			want:    []phaseCause{{"ready", "ok", ""}, {"bench", "failed", fatal + "\n" + oom}, {"gate", "ok", ""}},
			wantLog: []string{"runner: bench cause: " + fatal + " ⏎ " + oom},
		},
		{
			name: "bench failed, server still serving", printed: serving, benchErr: benchFailed, score: 0.9,
			want: []phaseCause{{"ready", "ok", ""}, {"bench", "failed", ""}, {"gate", "ok", ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := proctest.New(t)
			vllm := fake.Expect("vllm", "serve").UntilStopped()
			var log strings.Builder
			res := accuracyRecipe(workloads.Expectation{Metric: flexible, Min: ptr(0.8)})
			j := New(Config{Port: 8000}, res, Deps{Procs: fake, Log: &log, Getenv: mapGetenv(nil),
				Baselines: func(context.Context) (baseline.Source, error) { return nil, errors.New("no history") }})
			j.sum.Accuracy = gsm8kSummary(res.Recipe.Name, tt.score).Accuracy
			tail := proc.NewTail(serverLogTail)
			p, err := fake.Start(context.Background(), proc.Spec{Argv: []string{"vllm", "serve"}, Stdout: tail, Stderr: tail})
			if err != nil {
				t.Fatal(err)
			}
			j.server = &server{proc: p, prefix: proc.NewPrefixWriter(io.Discard, "[vllm] "), tail: tail}
			j.phase(context.Background(), summary.PhaseReady, func(context.Context) error { return nil })
			j.phase(context.Background(), summary.PhaseBench, func(context.Context) error {
				io.WriteString(tail, strings.Join(tt.printed, "\n")+"\n")
				if tt.crash {
					vllm.Finish(1)
					<-p.Done()
				}
				return tt.benchErr
			})
			j.teardown(context.Background(), false)
			if !tt.crash {
				io.WriteString(tail, strings.Join(shutdown, "\n")+"\n")
			}
			j.phase(context.Background(), summary.PhaseGate, j.gate)

			var got []phaseCause
			for _, p := range j.sum.Phases {
				got = append(got, phaseCause{p.Name, p.Status, p.Cause})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("phases (-want +got):\n%s", diff)
			}
			var causes []string
			for _, l := range strings.Split(log.String(), "\n") {
				if strings.HasPrefix(l, "runner: ") && strings.Contains(l, " cause: ") {
					causes = append(causes, l)
				}
			}
			if diff := cmp.Diff(tt.wantLog, causes); diff != "" {
				t.Errorf("the log's cause lines (-want +got):\n%s\nlog:\n%s", diff, log.String())
			}
		})
	}
}
