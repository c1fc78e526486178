package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// specTextE2E is a speculative recipe whose bench runs on MT-Bench's real
// prompts, with its model cache in the job's folder, gated on a drop in
// acceptance length against its own past nights (each at pastLength).
func specTextE2E(t *testing.T, name string, pastLength float64) (*e2e, string) {
	t.Helper()
	recipe := tinyHead(name, speculate) + `vllm_bench:
  configs:
    - name: mtbench
      dataset: mt-bench
      output_len: 16
      num_prompts: 8
      max_concurrency: 2
      regression:
        rerun_on_alarm: false
        metrics:
          spec_decode_acceptance_length: {max_drop_pct: 5}
`
	e := newE2E(t, name, recipe)
	hf := filepath.Join(e.dir, "hf")
	profiles := filepath.Join(e.dir, "agents", "profiles.yaml")
	data, err := os.ReadFile(profiles)
	if err != nil {
		t.Fatal(err)
	}
	head, tail, ok := strings.Cut(string(data), "\nMI355X:\n")
	if !ok {
		t.Fatal("agents/profiles.yaml has no MI355X profile")
	}
	if err := os.WriteFile(profiles, []byte(head+"\nMI355X:\n  hf_home: "+hf+"\n"+tail), 0o644); err != nil {
		t.Fatal(err)
	}
	e.setenv("FAKE_HF_FETCH_LOG", filepath.Join(e.dir, "hf-fetches.log"))
	f := baseline.File{Version: baseline.FileVersion, Recipes: map[string]baseline.FileRecipe{name: {StepKey: "recipe:" + name}}}
	fr := f.Recipes[name]
	for i := range 10 {
		sum, err := json.Marshal(summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: name, Verdict: summary.VerdictPass,
			Bench: []summary.BenchRun{{Name: "mtbench", Config: "mtbench", Status: summary.StatusOK,
				Metrics: map[string]float64{"spec_decode_acceptance_length": pastLength * (1 + pastWobble[i]/500)}}},
			Gates: newestUnconfirmed(i, "mtbench", "spec_decode_acceptance_length")})
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
	return e, hist
}

func (e *e2e) hfFetches() []string {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.dir, "hf-fetches.log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.Fields(string(data))
}

func accLengthGate(s summary.Summary) *summary.GateResult {
	for i, g := range s.Gates {
		if g.Kind == summary.GateRegression && g.Metric == "spec_decode_acceptance_length" {
			return &s.Gates[i]
		}
	}
	return nil
}

// TestE2ESpeculationOnRealText: the bench reads MT-Bench from the model
// cache with a fixed output length, records acceptance length and
// per-position acceptance, and a drop in acceptance length against the
// recipe's own nights fails its regression gate.
func TestE2ESpeculationOnRealText(t *testing.T) {
	t.Parallel()
	requireLinux(t)
	// The stand-in server's drafts of 2 tokens average about 2.4 tokens a step.
	for _, tt := range []struct {
		name    string
		past    float64
		code    int
		verdict string
	}{
		{name: "steady", past: 2.4, code: 0, verdict: summary.VerdictPass},
		{name: "dropped", past: 3.6, code: contract.ExitRegressed, verdict: summary.VerdictFail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			name := "spec-text-" + tt.name
			e, hist := specTextE2E(t, name, tt.past)
			o := e.run("--bench-only", "--baselines", hist)
			checkCode(t, o, tt.code)
			s := e.summary()
			if len(s.Bench) != 1 || s.Bench[0].Status != summary.StatusOK || s.Bench[0].SpecDecode == nil {
				t.Fatalf("bench = %+v, want one run with speculation measured", s.Bench)
			}
			sd := s.Bench[0].SpecDecode
			if sd.AcceptanceLength < 1 || len(sd.PerPosition) != 2 {
				t.Errorf("spec decode = %+v, want an acceptance length and 2 per-position rates", sd)
			}
			if body, _ := e.annotation(); !strings.Contains(body, ", mean length ") || !strings.Contains(body, "; by position ") {
				t.Errorf("annotation lacks the acceptance length and per-position acceptance:\n%s", body)
			}
			g := accLengthGate(s)
			if g == nil || g.Verdict != tt.verdict || g.Value == nil || *g.Value != sd.AcceptanceLength {
				t.Fatalf("acceptance length gate = %+v, want %s on tonight's %g", g, tt.verdict, sd.AcceptanceLength)
			}
			starts := benchCommands(o)
			for _, want := range []string{"--dataset-name hf --dataset-path philschmid/mt-bench --hf-split train --no-stream --hf-output-len 16 --ignore-eos"} {
				if !strings.Contains(starts, want) {
					t.Errorf("bench argv lacks %q:\n%s", want, starts)
				}
			}
			if strings.Contains(starts, "--random-input-len") {
				t.Errorf("bench argv has random lengths:\n%s", starts)
			}
			if got := e.hfFetches(); len(got) != 1 || got[0] != "philschmid/mt-bench" {
				t.Errorf("hub fetches = %q, want MT-Bench once, into the cache", got)
			}
			if fi, err := os.Stat(filepath.Join(e.dir, "hf", "datasets", "philschmid___mt-bench")); err != nil || !fi.IsDir() {
				t.Errorf("MT-Bench is not in the model cache: %v", err)
			}
		})
	}
}

// TestE2ERealTextOffline: an offline job (HF_HUB_OFFLINE=1) never fetches
// the dataset: cached, the bench reads it from the cache; not cached, the
// run fails before any request, saying why.
func TestE2ERealTextOffline(t *testing.T) {
	t.Parallel()
	requireLinux(t)
	for _, cached := range []bool{true, false} {
		name := "spec-text-offline-cached"
		if !cached {
			name = "spec-text-offline-empty"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e, hist := specTextE2E(t, name, 2.4)
			e.setenv("HF_HUB_OFFLINE", "1")
			if cached {
				if err := os.MkdirAll(filepath.Join(e.dir, "hf", "datasets", "philschmid___mt-bench"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			o := e.run("--bench-only", "--baselines", hist)
			if got := e.hfFetches(); len(got) != 0 {
				t.Errorf("an offline job fetched %q", got)
			}
			s := e.summary()
			if cached {
				checkCode(t, o, 0)
				if len(s.Bench) != 1 || s.Bench[0].Status != summary.StatusOK {
					t.Errorf("bench = %+v, want it run from the cache", s.Bench)
				}
				return
			}
			if o.code == 0 || len(s.Bench) != 1 || s.Bench[0].Status != summary.StatusFailed ||
				!strings.Contains(s.Bench[0].Error, "dataset not in the model cache: mt-bench (philschmid/mt-bench) is not under "+filepath.Join(e.dir, "hf")+" and the job is offline") {
				t.Errorf("exit %d, bench %+v; want the run failed on the missing cache", o.code, s.Bench)
			}
			if benchCommands(o) != "" {
				t.Errorf("the bench ran without its dataset")
			}
		})
	}
}

// benchCommands are the `vllm bench serve` command lines the runner
// logged, one a line.
func benchCommands(o outcome) string {
	var out []string
	for _, line := range strings.Split(o.stdout, "\n") {
		if strings.HasPrefix(line, "$ vllm bench serve ") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// newestUnconfirmed is the gate the newest past night (i 0) recorded:
// an unconfirmed spike on metric, as a nightly's first gross drop is.
// Tonight's drop then confirms it and is judged at once: without it,
// a drop this far beyond the noise would wait for the next night.
func newestUnconfirmed(i int, run, metric string) []summary.GateResult {
	if i != 0 {
		return nil
	}
	return []summary.GateResult{{Kind: summary.GateRegression, Subject: run, Metric: metric, Verdict: summary.VerdictPass,
		Detector: &summary.Detector{Unconfirmed: true}}}
}

// pastWobble is the past nights' noise in percent: irregular, as real
// nights are (a repeating pattern reads as level shifts).
var pastWobble = []float64{0, 0.6, -0.4, 0.3, -0.7, 0.5, -0.2, 0.8, -0.5, 0.1}
