package job

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/runner/internal/proc/proctest"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/tools"
	"github.com/benchkite/benchkite/workloads/workloadstest"
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
