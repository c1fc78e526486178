package gate

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// outcome is what a run left: its phases and gates.
type outcome struct {
	phases []summary.Phase
	gates  []summary.GateResult
}

func regressionGate() summary.GateResult {
	return summary.GateResult{Kind: summary.GateRegression, Subject: "c", Metric: "output_throughput", Verdict: summary.VerdictFail,
		Detector: &summary.Detector{P: 1e-6},
		ChangePoint: &summary.ChangePoint{Found: true, GoodRegime: &summary.Regime{Nights: []float64{1, 1, 1}},
			LastGood: summary.NightRef{VLLMCommit: "aaa"}, FirstBad: summary.NightRef{VLLMCommit: "bbb"}}}
}

var (
	accPass    = summary.GateResult{Kind: summary.GateAccuracy, Subject: "gsm8k", Metric: "em", Verdict: summary.VerdictPass}
	accFail    = summary.GateResult{Kind: summary.GateAccuracy, Subject: "gsm8k", Metric: "em", Verdict: summary.VerdictFail}
	noBaseline = summary.GateResult{Kind: summary.GateBench, Subject: "c", Metric: "ttft", Verdict: summary.VerdictNoBaseline}
	gateError  = summary.GateResult{Kind: summary.GateAccuracy, Subject: "gsm8k", Metric: "em", Verdict: summary.VerdictError}
	ok         = []summary.Phase{{Name: summary.PhaseBench, Status: summary.StatusOK}, {Name: summary.PhaseGate, Status: summary.StatusOK}}
	benchDied  = []summary.Phase{{Name: summary.PhaseBench, Status: summary.StatusFailed, Error: "server exited"}, {Name: summary.PhaseGate, Status: summary.StatusFailed}}
)

// outcomes are the gate outcomes of the completeness table.
var outcomes = map[string]outcome{
	"pass":                    {ok, []summary.GateResult{accPass}},
	"no-baseline":             {ok, []summary.GateResult{accPass, noBaseline}},
	"accuracy":                {ok, []summary.GateResult{accFail}},
	"gate-error":              {ok, []summary.GateResult{gateError}},
	"phase-failed+regression": {benchDied, []summary.GateResult{regressionGate()}},
	"regression":              {ok, []summary.GateResult{accPass, regressionGate()}},
	"regression+accuracy":     {ok, []summary.GateResult{accFail, regressionGate()}},
	"regression+no-baseline":  {ok, []summary.GateResult{regressionGate(), noBaseline}},
}

// foldedVerdicts is every verdict of one combination: the recipe step's, then
// the build's with that recipe alone.
type foldedVerdicts struct {
	Verdict, Style  string
	Exit            int
	Row, BuildStyle string
	BuildExit       int
	Bisect          bool
}

// TestVerdictCompleteness maps every gate outcome × kept or released by
// the build's budget × attached or not to one verdict, style and exit, for
// the recipe's step and for the build.
func TestVerdictCompleteness(t *testing.T) {
	t.Parallel()
	const fail, unv, pass, errV = summary.VerdictFail, summary.VerdictUnverified, summary.VerdictPass, summary.VerdictError
	want := map[string]foldedVerdicts{
		"pass/kept":                                 {pass, "success", 0, pass, "success", 0, false},
		"pass/released":                             {pass, "success", 0, pass, "success", 0, false},
		"pass/kept/attached":                        {unv, "warning", contract.ExitUnverified, unv, "warning", 0, false},
		"pass/released/attached":                    {unv, "warning", contract.ExitUnverified, unv, "warning", 0, false},
		"no-baseline/kept":                          {unv, "warning", contract.ExitUnverified, unv, "warning", 0, false},
		"no-baseline/released":                      {unv, "warning", contract.ExitUnverified, unv, "warning", 0, false},
		"no-baseline/kept/attached":                 {unv, "warning", contract.ExitUnverified, unv, "warning", 0, false},
		"no-baseline/released/attached":             {unv, "warning", contract.ExitUnverified, unv, "warning", 0, false},
		"accuracy/kept":                             {fail, "error", 1, fail, "error", 1, false},
		"accuracy/released":                         {fail, "error", 1, fail, "error", 1, false},
		"accuracy/kept/attached":                    {fail, "error", 1, fail, "error", 1, false},
		"accuracy/released/attached":                {fail, "error", 1, fail, "error", 1, false},
		"gate-error/kept":                           {errV, "error", 1, errV, "warning", 0, false},
		"gate-error/released":                       {errV, "error", 1, errV, "warning", 0, false},
		"gate-error/kept/attached":                  {errV, "error", 1, errV, "warning", 0, false},
		"gate-error/released/attached":              {errV, "error", 1, errV, "warning", 0, false},
		"phase-failed+regression/kept":              {errV, "error", 1, errV, "warning", 0, false},
		"phase-failed+regression/released":          {errV, "error", 1, errV, "warning", 0, false},
		"phase-failed+regression/kept/attached":     {errV, "error", 1, errV, "warning", 0, false},
		"phase-failed+regression/released/attached": {errV, "error", 1, errV, "warning", 0, false},
		"regression/kept":                           {fail, "warning", contract.ExitRegressed, RowRegressed, "error", 1, true},
		"regression/released":                       {fail, "warning", contract.ExitRegressed, pass, "success", 0, false},
		"regression/kept/attached":                  {fail, "warning", contract.ExitRegressed, RowRegressed, "error", 1, true},
		"regression/released/attached":              {fail, "warning", contract.ExitRegressed, unv, "warning", 0, false},
		"regression+accuracy/kept":                  {fail, "error", 1, fail, "error", 1, true},
		"regression+accuracy/released":              {fail, "error", 1, fail, "error", 1, false},
		"regression+accuracy/kept/attached":         {fail, "error", 1, fail, "error", 1, true},
		"regression+accuracy/released/attached":     {fail, "error", 1, fail, "error", 1, false},
		"regression+no-baseline/kept":               {fail, "warning", contract.ExitRegressed, RowRegressed, "error", 1, true},
		"regression+no-baseline/released":           {fail, "warning", contract.ExitRegressed, unv, "warning", 0, false},
		"regression+no-baseline/kept/attached":      {fail, "warning", contract.ExitRegressed, RowRegressed, "error", 1, true},
		"regression+no-baseline/released/attached":  {fail, "warning", contract.ExitRegressed, unv, "warning", 0, false},
	}
	seen := map[string]bool{}
	for name, o := range outcomes {
		for _, kept := range []bool{true, false} {
			for _, attached := range []bool{false, true} {
				key := name + map[bool]string{true: "/kept", false: "/released"}[kept] + map[bool]string{true: "/attached", false: ""}[attached]
				seen[key] = true
				w, ok := want[key]
				if !ok {
					t.Errorf("%s: no row in the table", key)
					continue
				}
				s := summary.Summary{Recipe: "r", Phases: o.phases, Gates: o.gates, Buildkite: &summary.BuildkiteInfo{JobID: "j"}}
				if attached {
					s.Attached = "http://127.0.0.1:8000"
				}
				run := JudgeRun(s, "")
				s.Verdict, s.Problems = run.Verdict, run.Problems
				var b Budget
				for _, g := range s.Gates {
					if g.Kind == summary.GateRegression && g.Verdict == summary.VerdictFail {
						b.Tests = append(b.Tests, BudgetTest{Recipe: s.Recipe, Subject: g.Subject, Metric: g.Metric, P: g.Detector.P, Flagged: true, Fails: kept})
					}
				}
				build := JudgeBuild([]summary.Summary{s}, nil, b)
				got := foldedVerdicts{run.Verdict, run.Style(), run.Exit(), build.Rows[0].Verdict, build.Style, build.Exit, len(build.Bisect) > 0}
				if diff := cmp.Diff(w, got); diff != "" {
					t.Errorf("%s (-want +got):\n%s", key, diff)
				}
				if st := Style(s); st != run.Style() {
					t.Errorf("%s: Style(stored summary) = %q, want the run's %q", key, st, run.Style())
				}
				if v := build.Rows[0].Summary.Verdict; v != pass && v != fail && v != unv && v != errV {
					t.Errorf("%s: the row's summary verdict %q is not a summary verdict", key, v)
				}
			}
		}
	}
	for key := range want {
		if !seen[key] {
			t.Errorf("table row %s matches no combination", key)
		}
	}
}

// A released regression says so in the row's problems and is no red
// night; a cancel is an
// error whatever the gates say; a summary the rules cannot derive keeps
// its own verdict.
func TestVerdictEdges(t *testing.T) {
	t.Parallel()
	s := summary.Summary{Recipe: "r", Phases: ok, Gates: []summary.GateResult{regressionGate()}, Verdict: summary.VerdictFail,
		Failure: &summary.Failure{Class: "perf", Signature: "regression gate"}}
	row := JudgeBuild([]summary.Summary{s}, nil, Budget{Tests: []BudgetTest{{Recipe: "r", Subject: "c", Metric: "output_throughput", Flagged: true}}}).Rows[0]
	if diff := cmp.Diff([]string{"pass within the build's false-alarm budget (was fail)"}, row.Summary.Problems); diff != "" || len(row.Released) != 1 {
		t.Errorf("released row problems (-want +got):\n%s\nreleased %d", diff, len(row.Released))
	}
	if row.Summary.Failure != nil {
		t.Errorf("a released row keeps its step's failure class %+v: the build would count a red night", row.Summary.Failure)
	}
	if j := JudgeRun(summary.Summary{Phases: ok, Gates: []summary.GateResult{accPass}}, "SIGTERM"); j.Verdict != summary.VerdictError || j.Exit() != 1 {
		t.Errorf("canceled run = %+v, exit %d; want error, 1", j, j.Exit())
	}
	lost := summary.Summary{Recipe: "lost", Verdict: summary.VerdictError, Problems: []string{"agent lost"}}
	if got := Style(lost); got != "error" {
		t.Errorf("Style(a lost job's error) = %q, want error", got)
	}
	if b := JudgeBuild(nil, nil, Budget{}); b.Style != "warning" || b.Exit != 0 {
		t.Errorf("an empty build = %q, exit %d; want warning, 0", b.Style, b.Exit)
	}
	same := []SameBuild{{Recipe: "r", Verdict: summary.VerdictFail}}
	passing := summary.Summary{Recipe: "r", Phases: ok, Gates: []summary.GateResult{accPass}, Verdict: summary.VerdictPass}
	if b := JudgeBuild([]summary.Summary{passing}, same, Budget{}); b.Rows[0].Verdict != summary.VerdictFail || b.Style != "error" || b.Exit != 1 || b.SameBuildFailing != 1 {
		t.Errorf("a failed same-build comparison = %s, %q, exit %d; want fail, error, 1", b.Rows[0].Verdict, b.Style, b.Exit)
	}
}

func ExampleJudgement_Exit() {
	for _, j := range []Judgement{{Verdict: summary.VerdictPass}, {Verdict: summary.VerdictUnverified}, {Verdict: summary.VerdictFail, RegressionOnly: true}, {Verdict: summary.VerdictFail}} {
		fmt.Println(j.Verdict, j.RegressionOnly, j.Exit())
	}
	// Output:
	// pass false 0
	// unverified false 75
	// fail true 79
	// fail false 1
}
