package e2e

import (
	"encoding/json"
	"github.com/benchkite/benchkite/internal/contract"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// TestE2ERerunOnAlarm: a bench config flagged on one repetition is run
// twice more on the same server before the gate decides, and the log and
// summary say what it cost; a recipe that opts out is judged on the one.
// The past nights are a thousand times faster than the stand-in, so
// tonight is flagged whatever the re-runs measure.
func TestE2ERerunOnAlarm(t *testing.T) {
	t.Parallel()
	requireLinux(t)
	for _, tt := range []struct {
		name   string
		optOut bool
		reruns int
	}{
		{name: "re-run", reruns: 2},
		{name: "opted out", optOut: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := "rerun-" + strings.ReplaceAll(tt.name, " ", "-")
			recipe := tinyRecipe(name, 1) + "  regression:\n    metrics:\n      output_throughput: {max_drop_pct: 5}\n"
			if tt.optOut {
				recipe += "    rerun_on_alarm: false\n"
			}
			e := newE2E(t, name, recipe)
			f := baseline.File{Version: baseline.FileVersion, Recipes: map[string]baseline.FileRecipe{name: {StepKey: "recipe:" + name}}}
			fr := f.Recipes[name]
			for i := range 10 {
				sum, err := json.Marshal(summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: name, Verdict: summary.VerdictPass,
					Bench: []summary.BenchRun{{Name: "short", Config: "short", Status: summary.StatusOK,
						Metrics: map[string]float64{"output_throughput": 1e9 * (1 + pastWobble[i]/100)}}},
					Gates: newestUnconfirmed(i, "short", "output_throughput")})
				if err != nil {
					t.Fatal(err)
				}
				fr.Nights = append(fr.Nights, baseline.FileNight{BuildNumber: 41 - i, Summary: sum})
			}
			f.Recipes[name] = fr
			hist := filepath.Join(e.dir, "baselines.json")
			if err := f.WriteFile(hist); err != nil {
				t.Fatal(err)
			}
			o := e.run("--bench-only", "--health-timeout", "5m", "--baselines", hist)
			checkCode(t, o, contract.ExitRegressed) // regression gates only: the report step judges it
			s := e.summary()
			if len(s.Bench) != 1 || s.Bench[0].Reruns != tt.reruns || s.Bench[0].Repetitions != 1+tt.reruns {
				t.Fatalf("bench = %+v, want %d re-runs", s.Bench, tt.reruns)
			}
			said := strings.Contains(o.stdout, "re-running the bench 2 more time(s) on the same server before deciding (GPU cost: 2 extra run(s))")
			if said != (tt.reruns > 0) {
				t.Errorf("log says re-run: %v, want %v:\n%s", said, tt.reruns > 0, o.stdout)
			}
			var gate *summary.GateResult
			for i, g := range s.Gates {
				if g.Kind == summary.GateRegression {
					gate = &s.Gates[i]
				}
			}
			if gate == nil || gate.Verdict != summary.VerdictFail || gate.Detector == nil || gate.Detector.Repetitions != 1+tt.reruns {
				t.Fatalf("regression gate = %+v, want a failure judged on %d repetitions", gate, 1+tt.reruns)
			}
			if judged := strings.Contains(gate.Message, "re-run on alarm: 3 repetitions"); judged != (tt.reruns > 0) {
				t.Errorf("gate message %q: judged on the re-runs %v, want %v", gate.Message, judged, tt.reruns > 0)
			}
			e.checkNoLeftovers()
		})
	}
}
