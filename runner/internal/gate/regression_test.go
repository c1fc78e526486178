package gate

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/detect"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// wobble is a fixed ±1 % pattern of night-to-night noise (CV about 0.8 %).
var wobble = []float64{0.4, -0.8, 1.0, -0.2, 0.6, -1.0, 0.2, 0.8, -0.6, -0.4}

// seriesNights are past nights, newest first, numbered down from build
// 100, each with its vLLM commit and image digest: tput[i] and tpot[i]
// are night i's values, oldest first.
func seriesNights(t *testing.T, tput, tpot []float64) []baseline.Night {
	t.Helper()
	var out []baseline.Night
	for i := len(tput) - 1; i >= 0; i-- {
		build := 100 - (len(tput) - 1 - i)
		out = append(out, baseline.Night{BuildNumber: build, Summary: baselinetest.Encode(t, summary.Summary{
			Recipe: "r-h200", Verdict: summary.VerdictPass, VLLMCommit: fmt.Sprintf("%07x", 0xabc0000+build),
			ImageDigest: fmt.Sprintf("sha256:%064x", build),
			Bench:       []summary.BenchRun{{Name: "8k", Config: "8k", Status: summary.StatusOK, Metrics: tputTPOT(tput[i], tpot[i])}},
		})})
	}
	return out
}

// flat is n nights around tput and tpot with the wobble.
func flat(n int, tput, tpot float64) (a, b []float64) {
	for i := range n {
		w := wobble[i%len(wobble)] / 100
		a = append(a, tput*(1+w))
		b = append(b, tpot*(1-w))
	}
	return a, b
}

// regressionCase is what a test checks of one regression gate.
type regressionCase struct {
	Verdict          string
	Rule             string
	Used, Reps       int
	ReducedPower     bool
	LastGood         int // build; -1 for none
	FirstBad         int // build; 0 is tonight
	Found            bool
	Bisect           int
	MessageHas       []string
	BaselineRecorded bool
}

func project(g summary.GateResult) regressionCase {
	c := regressionCase{Verdict: g.Verdict, LastGood: -1, BaselineRecorded: g.Baseline != nil}
	if d := g.Detector; d != nil {
		c.Rule, c.Used, c.Reps, c.ReducedPower = d.Rule, d.Used, d.Repetitions, d.ReducedPower
	}
	if cp := g.ChangePoint; cp != nil {
		c.LastGood, c.FirstBad, c.Found, c.Bisect = cp.LastGood.Build, cp.FirstBad.Build, cp.Found, len(cp.Bisect)
		if cp.FirstBad.Tonight {
			c.FirstBad = 0
		}
	}
	return c
}

func TestRegressionGates(t *testing.T) {
	t.Parallel()
	policy := &workloads.Regression{Nights: 30, MaxMissing: 25, Metrics: []workloads.RegressionMetric{
		{Metric: "output_throughput", HigherIsBetter: true, MaxDropPct: 5},
		{Metric: "median_tpot_ms", HigherIsBetter: false, MaxDropPct: 10},
	}}
	steady := func(t *testing.T) []baseline.Night {
		tput, tpot := flat(30, 100, 20)
		return seriesNights(t, tput, tpot)
	}
	// The last three nights were 4 % slower: beyond the noise, within the
	// 5 % floor, so they passed; tonight is 6 % down.
	creeping := func(t *testing.T) []baseline.Night {
		tput, tpot := flat(30, 100, 20)
		for i := 27; i < 30; i++ {
			tput[i] *= 0.96
		}
		return seriesNights(t, tput, tpot)
	}
	// The last two nights were 7 % slower, and their gates flagged it or
	// (under a floor since lowered) passed it.
	dropped := func(flag bool) func(t *testing.T) []baseline.Night {
		return func(t *testing.T) []baseline.Night {
			tput, tpot := flat(30, 100, 20)
			tput[28], tput[29] = 93, 93.2
			nights := seriesNights(t, tput, tpot)
			for i := range 2 {
				s, err := summary.Read(bytes.NewReader(nights[i].Summary))
				if err != nil {
					t.Fatal(err)
				}
				verdict := summary.VerdictPass
				if flag {
					verdict = summary.VerdictFail
				}
				s.Gates = append(s.Gates, summary.GateResult{Kind: summary.GateRegression, Subject: "8k", Metric: "output_throughput", Verdict: verdict})
				s.Verdict = summary.VerdictFail
				nights[i].Summary, nights[i].Failed = baselinetest.Encode(t, s), true
			}
			return nights
		}
	}
	// Last night was 10 % slower (and its latency 15 % higher), a gross
	// margin its gate left unconfirmed, as one night of a slow machine.
	spiked := func(t *testing.T) []baseline.Night {
		tput, tpot := flat(30, 100, 20)
		tput[29], tpot[29] = 90, 23
		nights := seriesNights(t, tput, tpot)
		s, err := summary.Read(bytes.NewReader(nights[0].Summary))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"output_throughput", "median_tpot_ms"} {
			s.Gates = append(s.Gates, summary.GateResult{Kind: summary.GateRegression, Subject: "8k", Metric: m, Verdict: summary.VerdictPass,
				Detector: &summary.Detector{Unconfirmed: true}})
		}
		nights[0].Summary = baselinetest.Encode(t, s)
		return nights
	}
	young := func(n int) func(t *testing.T) []baseline.Night {
		return func(t *testing.T) []baseline.Night {
			tput, tpot := flat(n, 100, 20)
			return seriesNights(t, tput, tpot)
		}
	}
	tonight := func(status string, tput, tpot float64, reps ...float64) *summary.Summary {
		run := summary.BenchRun{Name: "8k", Config: "8k", Status: status, Metrics: tputTPOT(tput, tpot)}
		if len(reps) > 0 {
			run.RepetitionValues = map[string][]float64{"output_throughput": reps}
		}
		return &summary.Summary{Recipe: "r-h200", VLLMCommit: "def4567", ImageDigest: "sha256:" + strings.Repeat("e", 64),
			Buildkite: &summary.BuildkiteInfo{BuildNumber: "101"},
			Bench:     []summary.BenchRun{run}}
	}
	tests := []struct {
		name      string
		configPol bool
		nights    func(t *testing.T) []baseline.Night
		err       error
		sum       *summary.Summary
		want      []regressionCase
		lookup    bool
	}{
		{
			name: "within the noise", nights: steady, sum: tonight(summary.StatusOK, 99, 20.2), lookup: true,
			want: []regressionCase{
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true, MessageHas: []string{"8k output_throughput = 99: not flagged: tonight 99 is 1.0% worse than the baseline 100 (median of 30 nights; noise CV 0.7% from 29 nights), below the 5% floor"}},
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true, MessageHas: []string{"not flagged"}},
			},
		},
		{
			// Beyond the noise (1.9 %) but not the floor: a pass that says so.
			name: "beyond the noise, below the floor", nights: steady, sum: tonight(summary.StatusOK, 97, 21), lookup: true,
			want: []regressionCase{
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true, MessageHas: []string{"3.0% worse than the baseline 100", "below the 5% floor"}},
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true, MessageHas: []string{"below the 10% floor"}},
			},
		},
		{
			// Fourteen noise CVs down with nothing before it as bad: a
			// slow machine's night looks like this, and the next night
			// confirms it or not.
			name: "a clean drop tonight, policy on the config", configPol: true, nights: steady, sum: tonight(summary.StatusOK, 90, 23), lookup: true,
			want: []regressionCase{
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true,
					MessageHas: []string{"unconfirmed (p < 0.0001", "tonight 90 is 10.0% worse", "the next night confirms it or not"}},
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true, MessageHas: []string{"unconfirmed"}},
			},
		},
		{
			// Its second night confirms it: the night before was set
			// aside from the noise and the level, and its drop fails now.
			name: "a clean drop on its second night", nights: spiked, sum: tonight(summary.StatusOK, 90, 23), lookup: true,
			want: []regressionCase{
				{Verdict: "fail", Rule: "single-night", Used: 28, Reps: 1, LastGood: 99, FirstBad: 100, Bisect: 3, BaselineRecorded: true,
					MessageHas: []string{"flagged (single-night, p < 0.0001", "tonight 90 is 10.2% worse", "last good #99", "first bad #100 90 vLLM abc0064", "bisect with: git -C vllm rev-list --first-parent --reverse abc0063..abc0064"}},
				{Verdict: "fail", Rule: "single-night", Used: 28, Reps: 1, LastGood: 99, FirstBad: 100, Bisect: 3, BaselineRecorded: true},
			},
		},
		{
			// Three nights 4 % down (under the floor) do not become the
			// level: tonight, 6 % down from the nights before, fails. The
			// night before looked worse too, so the range is widened to
			// it (the drop began two nights earlier still: see the README
			// on culprit coverage).
			name: "a drop that began before tonight", nights: creeping, sum: tonight(summary.StatusOK, 94, 20), lookup: true,
			want: []regressionCase{
				{Verdict: "fail", Rule: "single-night", Used: 29, Reps: 1, LastGood: 99, FirstBad: 0, Bisect: 3, BaselineRecorded: true,
					MessageHas: []string{"last good #99", "first bad tonight (#101)", "widened"}},
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true},
			},
		},
		{
			// Tonight is 4 % down, within the floor on its own, but nearer
			// the two flagged nights than the level: still regressed. (The
			// search puts the change a night early, and the range is
			// widened.)
			name: "a regression two nights ago stays red until it is fixed", nights: dropped(true), sum: tonight(summary.StatusOK, 96, 20), lookup: true,
			want: []regressionCase{
				{Verdict: "fail", Rule: "open-regression", Used: 29, Reps: 1, LastGood: 96, FirstBad: 99, Found: true, Bisect: 3, BaselineRecorded: true,
					MessageHas: []string{"still regressed: tonight 96 is 4.2% worse than the baseline 100.2", "the regression of 7.0% that began 3 nights ago (p = 0.00029) is neither fixed nor accepted"}},
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true},
			},
		},
		{
			name: "the same nights, passed by their gates: tonight alone", nights: dropped(false), sum: tonight(summary.StatusOK, 96, 20), lookup: true,
			want: []regressionCase{
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true, MessageHas: []string{"not flagged: tonight 96 is 4.2% worse", "the drop of 7.0% the history shows 3 nights ago (p = 0.00029) was never confirmed by a flagged night"}},
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true},
			},
		},
		{
			name: "a regression two nights ago, fixed tonight", nights: dropped(true), sum: tonight(summary.StatusOK, 99.5, 20), lookup: true,
			want: []regressionCase{
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true, MessageHas: []string{"fixed: tonight 99.5", "is gone"}},
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true},
			},
		},
		{
			name: "better in the right direction passes however far", nights: steady, sum: tonight(summary.StatusOK, 150, 10), lookup: true,
			want: []regressionCase{
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true, MessageHas: []string{"50.0% better than the baseline"}},
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true, MessageHas: []string{"better than the baseline"}},
			},
		},
		{
			// Repetitions that disagree widen tonight's bound: a mean 6 %
			// down with repetitions from 80 to 108 is not flagged.
			name: "noisy repetitions", nights: steady, sum: tonight(summary.StatusOK, 94, 20, 80, 94, 108), lookup: true,
			want: []regressionCase{
				{Verdict: "pass", Used: 29, Reps: 3, LastGood: -1, BaselineRecorded: true},
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true},
			},
		},
		{
			// Runs on the same machine agree: they cannot tell a slow
			// machine from a slow build.
			name: "agreeing repetitions", nights: steady, sum: tonight(summary.StatusOK, 90, 20, 89.5, 90, 90.5), lookup: true,
			want: []regressionCase{
				{Verdict: "pass", Used: 29, Reps: 3, LastGood: -1, BaselineRecorded: true, MessageHas: []string{"unconfirmed"}},
				{Verdict: "pass", Used: 29, Reps: 1, LastGood: -1, BaselineRecorded: true},
			},
		},
		{
			name: "a young recipe: judged with reduced power", nights: young(6), sum: tonight(summary.StatusOK, 80, 20), lookup: true,
			want: []regressionCase{
				// The night before was a night's noise worse: the range holds it.
				{Verdict: "fail", Rule: "single-night", Used: 6, Reps: 1, ReducedPower: true, LastGood: 99, FirstBad: 0, Bisect: 3, BaselineRecorded: true,
					MessageHas: []string{"judged on 6 nights, fewer than the 30 the detector is calibrated for", "widened"}},
				{Verdict: "pass", Used: 6, Reps: 1, ReducedPower: true, LastGood: -1, BaselineRecorded: true},
			},
		},
		{
			// A new recipe passes on its absolute gates, not soft-failed.
			name: "first nights: no regression check yet", nights: young(4), sum: tonight(summary.StatusOK, 50, 40), lookup: true,
			want: []regressionCase{
				{Verdict: "pass", Reps: 1, LastGood: -1, MessageHas: []string{"8k output_throughput = 50: first nights: no regression check yet (4 past nights, 5 needed)"}},
				{Verdict: "pass", Reps: 1, LastGood: -1},
			},
		},
		{
			name: "baseline API refuses: no-baseline", err: fmt.Errorf("%w: %w", baseline.ErrNoBaseline, bkapi.ErrUnauthorized),
			sum: tonight(summary.StatusOK, 50, 40), lookup: true,
			want: []regressionCase{
				{Verdict: "no-baseline", LastGood: -1, MessageHas: []string{"8k output_throughput = 50: no baseline (no baseline: " + bkapi.ErrUnauthorized.Error() + ")"}},
				{Verdict: "no-baseline", LastGood: -1},
			},
		},
		{
			name: "run failed: an error, without looking up nights", nights: steady, sum: tonight(summary.StatusFailed, 10, 100),
			want: []regressionCase{
				{Verdict: "error", LastGood: -1, MessageHas: []string{"8k output_throughput: not measured: the run is failed"}},
				{Verdict: "error", LastGood: -1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bench := &workloads.Bench{Configs: []workloads.BenchConfig{{Name: "8k"}}}
			if tt.configPol {
				bench.Configs[0].Regression = policy
			} else {
				bench.Regression = policy
			}
			src := &baselinetest.Source{Err: tt.err, Nights: map[string][]baseline.Night{}}
			if tt.nights != nil {
				src.Nights["r-h200"] = tt.nights(t)
			}
			g := Gater{Res: withRuns(&workloads.Resolved{Recipe: &workloads.Recipe{Name: "r-h200", Bench: bench}}), History: src.History()}
			gates := g.Apply(context.Background(), tt.sum)
			var got []regressionCase
			for i, gr := range gates {
				c := project(gr)
				if i < len(tt.want) {
					for _, m := range tt.want[i].MessageHas {
						if !strings.Contains(gr.Message, m) {
							t.Errorf("gate %d message = %q\nwant it to contain %q", i, gr.Message, m)
						}
					}
					c.MessageHas = tt.want[i].MessageHas
				}
				got = append(got, c)
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Apply() diff (-got +want):\n%s\ngates: %+v", diff, gates)
			}
			var wantCalls []baselinetest.Call
			if tt.lookup {
				wantCalls = []baselinetest.Call{{Recipe: "r-h200", StepKey: "recipe:r-h200", N: 30}}
			}
			if diff := cmp.Diff(src.Calls(), wantCalls); diff != "" {
				t.Errorf("baseline lookups diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestBisectNeedsBothCommits(t *testing.T) {
	t.Parallel()
	good := summary.NightRef{Build: 7, VLLMCommit: "abc1234"}
	bad := summary.NightRef{Tonight: true, VLLMCommit: "def5678"}
	tests := []struct {
		good, bad summary.NightRef
		want      []string
	}{
		{good, bad, []string{
			"git -C vllm rev-list --first-parent --reverse abc1234..def5678",
			"generator trigger --vllm-commit abc1234 --workloads-list r-h200 --bench-only --message 'bisect r-h200: last good abc1234'",
			"generator trigger --vllm-commit def5678 --workloads-list r-h200 --bench-only --message 'bisect r-h200: first bad def5678'",
		}},
		{summary.NightRef{Build: 7}, bad, nil},
		{good, summary.NightRef{Tonight: true, VLLMCommit: "$(rm -rf /)"}, nil}, // not a commit
		{good, summary.NightRef{VLLMCommit: "abc1234"}, nil},                    // same image
	}
	for _, tt := range tests {
		got := bisect("r-h200", summary.ChangePoint{LastGood: tt.good, FirstBad: tt.bad})
		if diff := cmp.Diff(got, tt.want); diff != "" {
			t.Errorf("bisect(%+v, %+v) diff (-got +want):\n%s", tt.good, tt.bad, diff)
		}
	}
}

// The nights of an accepted regression were flagged before it was
// accepted; those flags are settled and confirm nothing after. A night
// flagged while the acceptance held is a new regression's, and stays.
func TestSeriesSettlesAcceptedFlags(t *testing.T) {
	t.Parallel()
	night := func(build int, flagged, accepted bool) pastValue {
		return pastValue{value: 100, ref: summary.NightRef{Build: build}, flagged: flagged, judged: true, accepted: accepted}
	}
	past := []pastValue{ // newest first
		night(106, true, true), night(105, false, true), night(104, true, false), night(103, true, false),
		night(102, false, false), night(101, true, false),
	}
	tests := []struct {
		name   string
		accept *workloads.Accept
		want   []int // indexes, oldest first
	}{
		{"no acceptance: every flag", nil, []int{0, 2, 3, 5}},
		{"accepted from #103: flags before the acceptance settled", &workloads.Accept{Since: "103", Build: 103, Reason: "r", Metrics: map[string]float64{"output_throughput": 3}}, []int{0, 5}},
		{"accepted from before the history: the same", &workloads.Accept{Since: "90", Build: 90, Reason: "r", Metrics: map[string]float64{"output_throughput": 3}}, []int{5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := seriesOf(past, &summary.Summary{}, tt.accept, workloads.RegressionMetric{Metric: "output_throughput", HigherIsBetter: true}, 107, time.Now())
			if diff := cmp.Diff(tt.want, s.flagged); diff != "" {
				t.Errorf("flagged nights (-want +got):\n%s", diff)
			}
		})
	}
}

// A recipe change is a known change point, but a bench run whose own
// shape changed measures another workload: its older nights are not
// compared. A change elsewhere (serve args) keeps them.
func TestBenchShapeChangeLeavesOlderNightsOut(t *testing.T) {
	t.Parallel()
	fp := func(seqs, shape string) *summary.Fingerprint {
		return summary.NewFingerprint(summary.FingerprintParts{Model: "m", ServeArgv: []string{"vllm", "serve", "m", "--max-num-seqs", seqs},
			Bench: []string{"8k backend=vllm " + shape, "other backend=vllm in=1"}, GPU: "H200", NumGPUs: 8})
	}
	policy := &workloads.Regression{Nights: 30, MaxMissing: 25, Metrics: []workloads.RegressionMetric{{Metric: "output_throughput", HigherIsBetter: true, MaxDropPct: 5}}}
	tests := []struct {
		name    string
		newer   int // nights that ran tonight's fingerprint, newest; the rest ran old
		old     *summary.Fingerprint
		verdict string
		nights  int
		note    string
	}{
		// A 10 % drop on 0.7 % noise waits a night for confirmation.
		{"serve args changed: every night compared", 10, fp("128", "in=8192 reps=3"), summary.VerdictPass, 20, "recipe changed at #91 (serve args)"},
		{"this run's shape changed: only the nights since", 10, fp("256", "in=4096"), summary.VerdictPass, 10, "the bench config of 8k changed after #90: the nights before measured another workload and are not compared"},
		{"only its repetitions changed: every night compared", 10, fp("256", "in=8192 reps=1"), summary.VerdictPass, 20, "recipe changed at #91 (bench config)"},
		{"shape changed three nights ago: first nights, saying why", 3, fp("256", "in=4096"), summary.VerdictPass, 3, "first nights: no regression check yet (3 past nights, 5 needed); the bench config of 8k changed after #97"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tput, tpot := flat(20, 100, 20)
			nights := seriesNights(t, tput, tpot)
			for i := range nights {
				s, err := summary.Read(bytes.NewReader(nights[i].Summary))
				if err != nil {
					t.Fatal(err)
				}
				s.Fingerprint = fp("256", "in=8192 reps=3")
				if i >= tt.newer {
					s.Fingerprint = tt.old
				}
				nights[i].Summary = baselinetest.Encode(t, s)
			}
			src := &baselinetest.Source{Nights: map[string][]baseline.Night{"r-h200": nights}}
			sum := &summary.Summary{Recipe: "r-h200", Fingerprint: fp("256", "in=8192 reps=3"),
				Bench: []summary.BenchRun{{Name: "8k", Config: "8k", Status: summary.StatusOK, Metrics: tputTPOT(90, 20)}}}
			bench := &workloads.Bench{Configs: []workloads.BenchConfig{{Name: "8k"}}, Regression: policy}
			gates := Gater{Res: withRuns(&workloads.Resolved{Recipe: &workloads.Recipe{Name: "r-h200", Bench: bench}}), History: src.History()}.Apply(context.Background(), sum)
			if len(gates) != 1 {
				t.Fatalf("Apply() = %+v, want one regression gate", gates)
			}
			g := gates[0]
			if g.Verdict != tt.verdict || g.Detector == nil || g.Detector.Nights != tt.nights || !strings.Contains(g.Message, tt.note) {
				t.Errorf("gate = %s on %v nights: %s; want %s on %d nights, saying %q", g.Verdict, g.Detector, g.Message, tt.verdict, tt.nights, tt.note)
			}
		})
	}
}

// An acceptance names its metrics and the level it accepts: another
// metric's regression, and a worsening beyond the level, fail as usual,
// on the acceptance's first night as on later ones.
func TestAcceptanceNamesMetricsAndLevel(t *testing.T) {
	t.Parallel()
	accept := func(since int) *workloads.Accept {
		return &workloads.Accept{Since: fmt.Sprint(since), Build: since, Reason: "fp8 KV cache", Metrics: map[string]float64{"output_throughput": 8}}
	}
	// Nights up to #100 at 100 tok/s; with since 99, #99 and #100 at the
	// accepted level, 8 % down.
	nights := func(levelFrom int) func(t *testing.T) []baseline.Night {
		return func(t *testing.T) []baseline.Night {
			tput, tpot := flat(30, 100, 20)
			for i := range tput {
				if 100-(len(tput)-1-i) >= levelFrom {
					tput[i] *= 0.92
				}
			}
			return seriesNights(t, tput, tpot)
		}
	}
	tests := []struct {
		name       string
		accept     *workloads.Accept
		levelFrom  int
		tput, tpot float64
		want       []string // verdicts: output_throughput, median_tpot_ms
		messageHas string
	}{
		{name: "no acceptance: an 8 % drop is flagged", levelFrom: 101, tput: 92, tpot: 20, want: []string{"unconfirmed", "pass"}},
		{name: "first night: the accepted drop passes", accept: accept(101), levelFrom: 101, tput: 92, tpot: 20, want: []string{"pass", "pass"},
			messageHas: "regression of output_throughput accepted since 101 (fp8 KV cache): up to 8% worse from tonight on"},
		{name: "first night: another metric's 60 % regression is flagged", accept: accept(101), levelFrom: 101, tput: 92, tpot: 32, want: []string{"pass", "unconfirmed"}},
		{name: "first night: beyond the accepted level is flagged", accept: accept(101), levelFrom: 101, tput: 85, tpot: 20, want: []string{"unconfirmed", "pass"}},
		{name: "later night: the accepted level passes", accept: accept(99), levelFrom: 99, tput: 92.2, tpot: 20, want: []string{"pass", "pass"},
			messageHas: "up to 8% worse from #99 on, so the 28 night(s) before count 8% worse"},
		{name: "later night: beyond the accepted level is flagged", accept: accept(99), levelFrom: 99, tput: 85, tpot: 20, want: []string{"unconfirmed", "pass"}},
		{name: "later night: another metric is flagged", accept: accept(99), levelFrom: 99, tput: 92.2, tpot: 32, want: []string{"pass", "unconfirmed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			policy := &workloads.Regression{Nights: 30, MaxMissing: 25, Accept: tt.accept, Metrics: []workloads.RegressionMetric{
				{Metric: "output_throughput", HigherIsBetter: true, MaxDropPct: 5},
				{Metric: "median_tpot_ms", HigherIsBetter: false, MaxDropPct: 10},
			}}
			src := &baselinetest.Source{Nights: map[string][]baseline.Night{"r-h200": nights(tt.levelFrom)(t)}}
			g := Gater{Res: withRuns(&workloads.Resolved{Recipe: &workloads.Recipe{Name: "r-h200", Bench: &workloads.Bench{Configs: []workloads.BenchConfig{{Name: "8k"}}, Regression: policy}}}), History: src.History()}
			sum := &summary.Summary{Recipe: "r-h200", Buildkite: &summary.BuildkiteInfo{BuildNumber: "101"},
				Bench: []summary.BenchRun{{Name: "8k", Config: "8k", Status: summary.StatusOK, Metrics: tputTPOT(tt.tput, tt.tpot)}}}
			var got []string
			for _, gr := range g.Apply(context.Background(), sum) {
				if gr.Kind != summary.GateRegression {
					continue
				}
				v := gr.Verdict
				if gr.Detector != nil && gr.Detector.Unconfirmed {
					// A clean drop's first night waits for the next to
					// confirm it: flagged, not accepted.
					v = "unconfirmed"
				}
				got = append(got, v)
				if gr.Metric == "output_throughput" && tt.messageHas != "" && !strings.Contains(gr.Message, tt.messageHas) {
					t.Errorf("message = %q, want it to contain %q", gr.Message, tt.messageHas)
				}
				if gr.Metric == "median_tpot_ms" && gr.Detector != nil && gr.Detector.Accepted != "" {
					t.Errorf("median_tpot_ms records an acceptance it does not have: %q", gr.Detector.Accepted)
				}
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("verdicts (output_throughput, median_tpot_ms) diff (-got +want):\n%s", diff)
			}
		})
	}
}

// A regression older than the history the gate asks for stays red: the
// night before carried its level and first build in its summary, and
// tonight's carries them on.
func TestOpenRegressionCarriedPastTheHistory(t *testing.T) {
	t.Parallel()
	policy := &workloads.Regression{Nights: 30, MaxMissing: 25, Metrics: []workloads.RegressionMetric{{Metric: "output_throughput", HigherIsBetter: true, MaxDropPct: 3}}}
	tput, tpot := flat(30, 94, 20)
	nights := seriesNights(t, tput, tpot)
	s, err := summary.Read(bytes.NewReader(nights[0].Summary))
	if err != nil {
		t.Fatal(err)
	}
	s.Gates = append(s.Gates, summary.GateResult{Kind: summary.GateRegression, Subject: "8k", Metric: "output_throughput", Verdict: summary.VerdictFail,
		Detector: &summary.Detector{OpenSince: 42, OpenLevel: 100, OpenWorsePct: 6}})
	nights[0].Summary = baselinetest.Encode(t, s)
	bench := &workloads.Bench{Configs: []workloads.BenchConfig{{Name: "8k"}}, Regression: policy}
	g := Gater{Res: withRuns(&workloads.Resolved{Recipe: &workloads.Recipe{Name: "r-h200", Bench: bench}}),
		History: (&baselinetest.Source{Nights: map[string][]baseline.Night{"r-h200": nights}}).History()}
	judge := func(v float64) summary.GateResult {
		sum := &summary.Summary{Recipe: "r-h200", Buildkite: &summary.BuildkiteInfo{BuildNumber: "101"},
			Bench: []summary.BenchRun{{Name: "8k", Config: "8k", Status: summary.StatusOK, Metrics: tputTPOT(v, 20)}}}
		return g.Apply(context.Background(), sum)[0]
	}
	gr := judge(94)
	d := gr.Detector
	if gr.Verdict != summary.VerdictFail || d == nil || d.Rule != "open-regression" || d.OpenSince != 42 || math.Abs(d.OpenLevel-100) > 1e-9 || d.OpenWorsePct != 6 ||
		!strings.Contains(gr.Message, "began before the 30 nights of the history") || !strings.Contains(gr.Message, "open since #42, 6.0% worse when caught, judged against 100") || !strings.Contains(gr.Message, "; began with #42 (before the nights the history holds)") {
		t.Errorf("tonight at the regressed level: %s, %+v: %s; want still red, carried on from #42", gr.Verdict, d, gr.Message)
	}
	if !d.Held || !d.OpenHeld {
		t.Errorf("tonight at the regressed level: held %v, open held %v; want held: a regression carried past the history was confirmed", d.Held, d.OpenHeld)
	}
	// What the night before carried in its summary travels on: the
	// level's nights, and the strongest evidence, which the build's
	// budget weighs a held night by.
	s.Gates[len(s.Gates)-1].Detector = &summary.Detector{OpenSince: 42, OpenLevel: 100, OpenWorsePct: 6, OpenHeld: true, OpenP: 1e-12, OpenLevelNights: 25}
	nights[0].Summary = baselinetest.Encode(t, s)
	g.History = (&baselinetest.Source{Nights: map[string][]baseline.Night{"r-h200": nights}}).History()
	if d := judge(94).Detector; d.OpenLevelNights != 25 || !(d.OpenP <= 1e-12) || !(d.P < 1e-5) || !d.Held {
		t.Errorf("carried with its evidence: level nights %d, open p %v, budget p %v, held %v; want 25, at most 1e-12, the evidence's, held", d.OpenLevelNights, d.OpenP, d.P, d.Held)
	}
	s.Gates[len(s.Gates)-1].Detector = &summary.Detector{OpenSince: 42, OpenLevel: 100, OpenWorsePct: 6}
	nights[0].Summary = baselinetest.Encode(t, s)
	g.History = (&baselinetest.Source{Nights: map[string][]baseline.Night{"r-h200": nights}}).History()
	// Back at the level before it: still red, and carried, until
	// FixedNights nights in a row are.
	gr = judge(100)
	if d := gr.Detector; gr.Verdict != summary.VerdictFail || d.OpenPassed != 1 || d.OpenSince != 42 || !d.OpenHeld ||
		!strings.Contains(gr.Message, fmt.Sprintf("it is fixed only once %d nights in a row are (1 so far)", detect.FixedNights)) {
		t.Errorf("tonight back at 100: %s, %+v: %s; want still red, one night of %d fixed", gr.Verdict, d, gr.Message, detect.FixedNights)
	}
}
