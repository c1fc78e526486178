package job

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/proc/proctest"
	"github.com/benchkite/benchkite/runner/internal/rootcause"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var cmpIgnoreSource = cmpopts.IgnoreFields(summary.Failure{}, "Source")

// recorded reads an excerpt of vLLM 0.26.0's own output on an H200.
func recorded(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "vllm-0.26.0", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// recordedServer is a started server whose output is fed as serve()
// feeds it.
func recordedServer(t *testing.T, fake *proctest.Fake) (*server, io.Writer) {
	t.Helper()
	p, err := fake.Start(context.Background(), proc.Spec{Argv: []string{"vllm", "serve"}})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{proc: p, prefix: proc.NewPrefixWriter(io.Discard, "[vllm] "), tail: proc.NewTail(serverLogTail), causes: &rootcause.Tracker{}}
	return s, io.MultiWriter(s.tail, s.causes)
}

// recordedRun is a job on accuracyRecipe whose server, the fake's vllm
// serve running until stopped, is fed recorded output through out.
type recordedRun struct {
	j    *Job
	vllm *proctest.Call
	log  *strings.Builder
	out  io.Writer
}

func newRecordedRun(t *testing.T) recordedRun {
	t.Helper()
	fake := proctest.New(t)
	r := recordedRun{vllm: fake.Expect("vllm", "serve").UntilStopped(), log: &strings.Builder{}}
	r.j = New(Config{Port: 1, ResultsDir: t.TempDir()}, accuracyRecipe(), Deps{Procs: fake, Log: r.log, Getenv: mapGetenv(nil)})
	r.j.server, r.out = recordedServer(t, fake)
	return r
}

// judge gives the job its verdict and problems, as Run does, and returns
// the judgement.
func judge(ctx context.Context, j *Job) gate.Judgement {
	judged := j.verdict(ctx)
	j.sum.Verdict, j.sum.Problems = judged.Verdict, judged.Problems
	return judged
}

// The closing lines of the job log, after the verdict's.
func closingLines(log string) []string {
	_, after, _ := strings.Cut(log, "+++ :x: ")
	lines := strings.Split(strings.TrimSpace(after), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return lines
}

// An engine that fails to start: the EngineCore's ModuleNotFoundError is
// the cause and summary.failure's line, not the API server's "See root
// cause above" after it (nor the NCCL warning between them).
func TestRecordedEngineStartFails(t *testing.T) {
	t.Parallel()
	const root = "(EngineCore pid=1150) ModuleNotFoundError: No module named 'flashinfer'"
	r := newRecordedRun(t)
	j, vllm, log, s, out := r.j, r.vllm, r.log, r.j.server, r.out
	io.WriteString(out, recorded(t, "engine-start-fails.server.log"))
	vllm.Finish(1)
	<-s.done()
	j.phase(context.Background(), summary.PhaseServe, func(context.Context) error { return nil })
	if j.phase(context.Background(), summary.PhaseReady, j.ready) {
		t.Fatal("ready passed")
	}
	if p := j.sum.Phase(summary.PhaseReady); p.Cause != root {
		t.Errorf("ready cause = %q, want %q", p.Cause, root)
	}
	if !strings.Contains(log.String(), "runner: ready cause: "+root+"\n") {
		t.Errorf("the log does not name the cause:\n%s", log.String())
	}
	j.teardown(context.Background(), false)
	judge(context.Background(), j)
	got := j.failure()
	want := &summary.Failure{Class: "vllm", Signature: "vllm-import-error", Line: root, Phase: "ready"}
	if diff := cmp.Diff(want, got, cmpIgnoreSource); diff != "" {
		t.Errorf("failure (-want +got):\n%s", diff)
	}
}

// The API server SIGKILLed before the first bench run: the bench's cause
// is the server's death, naming the API server (not the c10d hostname
// warning vLLM prints at every start, nor the bench's own connection
// errors), and the closing list leads with it.
func TestRecordedServerKilledMidBench(t *testing.T) {
	t.Parallel()
	const death = "the server died: vllm (APIServer pid=4540) killed by signal 9 (killed)"
	r := newRecordedRun(t)
	j, vllm, log, s, out := r.j, r.vllm, r.log, r.j.server, r.out
	j.phase(context.Background(), summary.PhaseReady, func(context.Context) error { return nil })
	benchErr := errors.New("512-in-128-out-conc-8: repetition 1: incomplete benchmark run: completed 0 of 64 prompts, 64 requests failed")
	j.phase(context.Background(), summary.PhaseBench, func(context.Context) error {
		io.WriteString(out, recorded(t, "server-killed-mid-bench.server.log"))
		vllm.Kill(syscall.SIGKILL)
		<-s.done()
		// What the bench client printed, had it failed on its own.
		bench := proc.NewTail(40)
		io.WriteString(bench, recorded(t, "server-killed-mid-bench.bench.log"))
		j.noteCause(bench)
		return benchErr
	})
	if p := j.sum.Phase(summary.PhaseBench); p.Cause != death {
		t.Errorf("bench cause = %q, want %q", p.Cause, death)
	}
	j.notRun(context.Background(), summary.PhaseLMEval, "server exited")
	j.teardown(context.Background(), false)
	judged := judge(context.Background(), j)
	want := &summary.Failure{Class: "vllm", Signature: "server-died", Line: death, Phase: "bench"}
	if diff := cmp.Diff(want, j.failure(), cmpIgnoreSource); diff != "" {
		t.Errorf("failure (-want +got):\n%s", diff)
	}
	j.finish(judged)
	wantLines := []string{
		"r-mi355x: error",
		"server exited during the run: vllm killed by signal 9 (killed)",
		"bench failed: " + benchErr.Error(),
		"lm_eval not-run: server exited",
	}
	if diff := cmp.Diff(wantLines, closingLines(log.String())); diff != "" {
		t.Errorf("closing lines (-want +got):\n%s", diff)
	}
}

// SIGTERM during the model load: the closing headline says canceled, and
// the run has no class (someone chose to stop it).
func TestRecordedCancelDuringLoad(t *testing.T) {
	t.Parallel()
	r := newRecordedRun(t)
	j, log := r.j, r.log
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("received terminated"))
	j.phase(ctx, summary.PhaseReady, func(ctx context.Context) error {
		return errors.New("ready: wait for http://127.0.0.1:45487/health (last: connection refused): received terminated")
	})
	j.teardown(context.Background(), true)
	judged := judge(ctx, j)
	j.sum.Canceled = context.Cause(ctx).Error()
	if f := j.failure(); f != nil {
		t.Errorf("failure = %+v, want none", f)
	}
	j.finish(judged)
	if got := closingLines(log.String())[0]; got != "r-mi355x: error: canceled (received terminated)" {
		t.Errorf("closing headline = %q", got)
	}
}
