package e2e

import (
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// A server's Python without pytest, where pip finds none of the locked
// wheels: the run is the harness's error, naming pip's reason, and no
// server starts.
func TestE2EPytestInstallFails(t *testing.T) {
	t.Parallel()
	const name = "e2e-pytest-fails"
	e := newE2E(t, name, tinyRecipe(name, 1))
	e.withoutPytest(t.TempDir())
	o := e.run("--health-timeout", "5m")
	if o.code == 0 {
		t.Fatalf("the run passed:\n%s", o.stdout)
	}
	s := e.summary()
	if s.Verdict != summary.VerdictError {
		t.Errorf("verdict = %q, want error", s.Verdict)
	}
	p := s.Phase(summary.PhaseServe)
	if p == nil || p.Status != summary.StatusFailed || !strings.Contains(p.Error, "pytest: install into ") || !strings.Contains(p.Error, "from its lock") && !strings.Contains(p.Error, "(lock pytest-") {
		t.Fatalf("serve phase = %+v, want failed on the pytest install", p)
	}
	if !strings.Contains(p.Cause, "Could not find a version that satisfies the requirement") {
		t.Errorf("the phase's cause %q is not pip's reason", p.Cause)
	}
	if s.ServerPytest != nil {
		t.Errorf("summary records a pytest step that failed: %+v", s.ServerPytest)
	}
	if starts := e.serverStarts(); len(starts) != 0 {
		t.Errorf("vllm serve started after the failed install: %q", starts)
	}
	if s.Failure == nil || s.Failure.Class != "harness" {
		t.Errorf("failure = %+v, want class harness", s.Failure)
	}
	e.checkAnnotation("error", "harness", "Could not find a version that satisfies the requirement")
	e.checkNoLeftovers()
}
