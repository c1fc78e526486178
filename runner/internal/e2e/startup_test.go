package e2e

import (
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// The server's start-up, as the stand-in's engine logs it the way vLLM
// 0.26.0 does, reaches summary.json, the log and the annotation, and a
// recipe that opts in gets its start-up gates.
func TestE2EStartupMeasured(t *testing.T) {
	t.Parallel()
	const name = "e2e-startup"
	recipe := strings.Replace(tinyRecipe(name, 1), "  model: benchkite/tiny-model\n",
		"  model: benchkite/tiny-model\n  startup_regression: {metrics: {ready_s: {max_drop_pct: 50}, torch_compile_s: {max_drop_pct: 50}}}\n", 1)
	e := newE2E(t, name, recipe)
	e.setenv("FAKE_VLLM_STARTUP_DELAY", "1s")
	o := e.run()
	s := e.summary()
	st := s.Startup
	if st == nil {
		t.Fatalf("summary has no startup:\n%s", o.stdout)
	}
	// The engine spends the whole delay loading; the server is ready
	// after it.
	if st.ReadySeconds < 1 || st.ReadySeconds > 30 {
		t.Errorf("ready_s = %g, want at least the 1 s load", st.ReadySeconds)
	}
	for what, v := range map[string]*float64{"weights": st.WeightsSeconds, "model load": st.ModelLoadSeconds, "torch.compile": st.TorchCompileSeconds,
		"CUDA graphs": st.CUDAGraphsSeconds, "engine init": st.EngineInitSeconds} {
		if v == nil {
			t.Errorf("startup lacks %s: %+v", what, st)
		}
	}
	if st.EngineInitSeconds != nil && st.ModelLoadSeconds != nil && (*st.EngineInitSeconds+*st.ModelLoadSeconds > st.ReadySeconds || *st.EngineInitSeconds < 0.7) {
		t.Errorf("model load %g s + engine init %g s against ready %g s: not the stand-in's 1 s load", *st.ModelLoadSeconds, *st.EngineInitSeconds, st.ReadySeconds)
	}
	if !strings.Contains(o.stdout, "runner: start-up: ready in ") {
		t.Errorf("the log does not give the start-up:\n%s", o.stdout)
	}
	body, _ := e.annotation()
	if !strings.Contains(body, "**Start-up:** ready in ") {
		t.Errorf("the annotation does not give the start-up:\n%s", body)
	}
	var gates []string
	for _, g := range s.Gates {
		if g.Subject == "startup" {
			gates = append(gates, g.Metric+" "+g.Verdict)
			if g.Verdict != summary.VerdictPass && g.Verdict != summary.VerdictNoBaseline {
				t.Errorf("start-up gate %+v", g)
			}
		}
	}
	if len(gates) != 2 {
		t.Errorf("start-up gates %q, want ready_s and torch_compile_s", gates)
	}
	e.checkNoLeftovers()
}
