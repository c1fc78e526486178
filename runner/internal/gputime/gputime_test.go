package gputime

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

func at(min int) time.Time {
	return time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC).Add(time.Duration(min) * time.Minute)
}

// A night on 8 GPUs: 2 min tools, 20 min load, 30 min bench, 10 min
// lm_eval, 3 min teardown, 1 min gates.
func night(verdict string) summary.Summary {
	return summary.Summary{NumGPUs: 8, Started: at(0), Finished: at(66), Verdict: verdict, Phases: []summary.Phase{
		{Name: summary.PhaseTools, Status: summary.StatusOK, Started: at(0), Finished: at(2)},
		{Name: summary.PhaseServe, Status: summary.StatusOK, Started: at(2), Finished: at(3)},
		{Name: summary.PhaseReady, Status: summary.StatusOK, Started: at(3), Finished: at(22)},
		{Name: summary.PhaseBench, Status: summary.StatusOK, Started: at(22), Finished: at(52)},
		{Name: summary.PhaseLMEval, Status: summary.StatusOK, Started: at(52), Finished: at(62)},
		{Name: summary.PhaseBFCL, Status: summary.StatusSkipped, Error: "bench only"},
		{Name: summary.PhaseGate, Status: summary.StatusOK, Started: at(65), Finished: at(66)},
	}}
}

func TestOf(t *testing.T) {
	t.Parallel()
	s := night(summary.VerdictPass)
	got := Of(&s, 2.5)
	want := &summary.GPUTime{GPUs: 8, HourPrice: 2.5, Total: 66 * 60 * 8, Phases: map[string]float64{
		"tools": 2 * 60 * 8, "load": 20 * 60 * 8, "bench": 30 * 60 * 8, "lm_eval": 10 * 60 * 8, "teardown": 3 * 60 * 8,
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Of() (-want +got):\n%s", diff)
	}
	bad := night(summary.VerdictError)
	if g := Of(&bad, 0); g.Lost != g.Total || g.Lost == 0 {
		t.Errorf("a run that could not be judged lost %v of %v GPU-s, want all", g.Lost, g.Total)
	}
	if g := Of(&summary.Summary{NumGPUs: 8}, 0); g != nil {
		t.Errorf("a run that never started = %+v, want nil", g)
	}
}

func TestSumAndDominant(t *testing.T) {
	t.Parallel()
	a, b := night(summary.VerdictPass), night(summary.VerdictError)
	a.GPUTime, b.GPUTime = Of(&a, 3), Of(&b, 0)
	tot := Sum([]summary.Summary{a, b, {Recipe: "lost"}})
	if tot.Runs != 2 || tot.Total != 2*66*60*8 || tot.Lost != 66*60*8 || tot.Priced != 1 || math.Abs(tot.Cost-66.0/60*8*3) > 1e-9 {
		t.Errorf("Sum() = %+v", tot)
	}
	if d := tot.Dominant(); d != "bench" {
		t.Errorf("Dominant() = %q, want bench", d)
	}
	if d := (Totals{}).Dominant(); d != "" {
		t.Errorf("Dominant() of nothing = %q", d)
	}
}

// Retried tries add to the GPU time held and its cost; a step that left
// no summary counts its tries, not as a run.
func TestSumRetriedTries(t *testing.T) {
	t.Parallel()
	a := night(summary.VerdictPass)
	a.GPUTime = Of(&a, 3)
	a.GPUTime.Retried, a.GPUTime.RetriedTries = 30*60*8, map[string]int{"infra": 1}
	lost := summary.Summary{Recipe: "lost", GPUTime: &summary.GPUTime{RetriedTries: map[string]int{"infra": 1, "": 1}}}
	tot := Sum([]summary.Summary{a, lost})
	if tot.Runs != 1 || tot.Retried != 30*60*8 || tot.Total != (66+30)*60*8 || tot.Tries() != 3 || tot.RetriedTries["infra"] != 2 ||
		math.Abs(tot.Cost-96.0/60*8*3) > 1e-9 {
		t.Errorf("Sum() = %+v", tot)
	}
}
