package detect

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// noisy is n nights around level with a fixed 1 % wobble pattern.
func noisy(n int, level float64) []float64 {
	pattern := []float64{0, 1, -1, 0.5, -0.5, 1.2, -1.2, 0.3, -0.3, 0.8, -0.8, 0.1}
	out := make([]float64, n)
	for i := range out {
		out[i] = level * (1 + pattern[i%len(pattern)]/100)
	}
	return out
}

func cat(parts ...[]float64) []float64 {
	var out []float64
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func mustDetect(t *testing.T, hist, tonight []float64, cfg Config) Decision {
	t.Helper()
	d, err := Detect(hist, tonight, cfg)
	if err != nil {
		t.Fatalf("Detect() error = %v", err)
	}
	return d
}

func TestDetectBasics(t *testing.T) {
	t.Parallel()
	hist := noisy(30, 100)
	tests := []struct {
		name    string
		tonight float64
		cfg     Config
		flagged bool
		why     string
	}{
		{name: "within noise", tonight: 99, cfg: Config{HigherIsBetter: true}, why: "not flagged"},
		{name: "better", tonight: 110, cfg: Config{HigherIsBetter: true}, why: "better than the baseline"},
		{name: "drop", tonight: 95, cfg: Config{HigherIsBetter: true}, flagged: true, why: "flagged (single-night"},
		{name: "drop below the floor", tonight: 95, cfg: Config{HigherIsBetter: true, MinEffectPct: 8}, why: "below the 8% floor"},
		{name: "latency up", tonight: 105, flagged: true, why: "worse than the baseline"},
		{name: "latency down", tonight: 95, why: "better"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := mustDetect(t, hist, []float64{tt.tonight}, tt.cfg)
			if d.Flagged != tt.flagged || !strings.Contains(d.Why, tt.why) {
				t.Errorf("Detect(tonight %v) = flagged %v, %q; want flagged %v, containing %q", tt.tonight, d.Flagged, d.Why, tt.flagged, tt.why)
			}
			if !tt.flagged && tt.cfg.MinEffectPct > 0 && d.P != 1 {
				t.Errorf("a drop below the floor has P %v, want 1 (it spends no budget)", d.P)
			}
		})
	}
}

// After an improvement, the old nights no longer set the level or the
// noise: a drop back below the new level is caught.
func TestDetectLevelShiftThenDrop(t *testing.T) {
	t.Parallel()
	hist := cat(noisy(15, 100), noisy(15, 106))
	d := mustDetect(t, hist, []float64{101}, Config{HigherIsBetter: true})
	if !d.Flagged || d.RegimeStart != 15 || d.RegimeNights != 15 {
		t.Fatalf("Detect(+6 %% then a 5 %% drop) = flagged %v, regime %d+%d, %q; want flagged against the 15 nights since the change", d.Flagged, d.RegimeStart, d.RegimeNights, d.Why)
	}
	if d.NoiseCV > 0.01 {
		t.Errorf("noise CV %v: the level shift inflated the noise", d.NoiseCV)
	}
	if !strings.Contains(d.Why, "since the change 15 nights ago") {
		t.Errorf("Why = %q, want the regime named", d.Why)
	}
}

// A persistent regression stays red while it lasts, whatever nights pass
// in between, and turns green when the metric returns.
func TestDetectOpenRegressionDoesNotFlap(t *testing.T) {
	t.Parallel()
	hist := noisy(25, 100)
	reds := 0
	for night := range 20 {
		tonight := 94 * (1 + noisy(20, 1)[night]/100 - 0.01)
		d := mustDetect(t, hist, []float64{tonight}, Config{HigherIsBetter: true, MinEffectPct: 3})
		switch {
		case d.Flagged:
			reds++
		case night == 0 && d.Unconfirmed:
			reds++ // a drop of 7 noise CVs waits a night for confirmation
		default:
			t.Errorf("night %d of the regression (%.4g): not flagged: %s", night, tonight, d.Why)
		}
		hist = append(hist, tonight)
		if len(hist) > 30 {
			hist = hist[1:]
		}
	}
	if reds != 20 {
		t.Errorf("%d red nights of 20", reds)
	}
	d := mustDetect(t, hist, []float64{100}, Config{HigherIsBetter: true, MinEffectPct: 3})
	if d.Flagged || !strings.HasPrefix(d.Why, "fixed:") {
		t.Errorf("Detect(back at 100) = flagged %v, %q; want fixed", d.Flagged, d.Why)
	}
	d = mustDetect(t, hist, []float64{94}, Config{HigherIsBetter: true, MinEffectPct: 3})
	if d.Rule != RuleOpen || d.Open == nil || !strings.Contains(d.Why, "neither fixed nor accepted") {
		t.Errorf("Detect(still at 94) = rule %q, open %v, %q; want the open regression", d.Rule, d.Open, d.Why)
	}
}

// Two of the last three nights flagged are a regression before the
// search can see it: tonight stays red while it is nearer their level
// than the good one, though it would pass on its own; it is fixed once
// nearer the good level. One flagged night is no such run.
func TestDetectFlaggedRunStaysRed(t *testing.T) {
	t.Parallel()
	hist := cat(noisy(28, 100), []float64{97, 96.8})
	tests := []struct {
		name    string
		tonight float64
		flagged []int
		red     bool
		why     string
	}{
		{"no flags: tonight alone passes", 98, nil, false, "not flagged (p = 0.034"},
		{"one flagged night", 98, []int{29}, false, "not flagged (p = 0.034"},
		{"two flagged nights", 98, []int{28, 29}, true, "still regressed: tonight 98 is 2.0% worse than the baseline 100 (median of 28 nights, before the change 2 nights ago;"},
		{"two of three", 98, []int{27, 29}, true, "(the gate flagged two of the last three nights) is neither fixed nor accepted"},
		{"flags older than three nights", 98, []int{25, 26}, false, "not flagged"},
		{"back to the level", 99.9, []int{28, 29}, false, "fixed: tonight 99.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := mustDetect(t, hist, []float64{tt.tonight}, Config{HigherIsBetter: true, Flagged: tt.flagged})
			if d.Flagged != tt.red || !strings.Contains(d.Why, tt.why) {
				t.Errorf("Detect(%v, flagged %v) = flagged %v, %q; want flagged %v, containing %q", tt.tonight, tt.flagged, d.Flagged, d.Why, tt.red, tt.why)
			}
			if tt.red && (d.Rule != RuleOpen || d.Open == nil || d.Open.Index != tt.flagged[0] || d.P > DefaultFalseAlarmRate) {
				t.Errorf("rule %q, open %+v, P %v; want the open regression from the first flagged night with P within the rate", d.Rule, d.Open, d.P)
			}
		})
	}
}

// Flagged nights that are, after all, no worse than the nights before
// them start no regression: tonight is judged on its own.
func TestDetectFlaggedRunNoWorse(t *testing.T) {
	t.Parallel()
	hist := cat(noisy(28, 100), []float64{100.5, 101})
	d := mustDetect(t, hist, []float64{98}, Config{HigherIsBetter: true, Flagged: []int{28, 29}})
	if d.Rule != RuleSingle || d.Open != nil || slices.ContainsFunc(d.Changes, func(c Change) bool { return c.Flags }) {
		t.Errorf("Detect() = rule %q, open %+v, changes %+v: %q; want tonight judged on its own", d.Rule, d.Open, d.Changes, d.Why)
	}
}

// A drop the search finds in the history keeps nights red only when the
// gate confirmed it by flagging one of its nights; without the gate's
// verdicts, only when it is as large as tonight's own bound.
func TestDetectOpenRegressionMustBeConfirmed(t *testing.T) {
	t.Parallel()
	hist := cat(noisy(20, 100), noisy(10, 97))
	tests := []struct {
		name    string
		flagged []int
		red     bool
		why     string
	}{
		{"a night of it flagged", []int{21}, true, "still regressed"},
		{"the night before it flagged", []int{19}, true, "still regressed"},
		{"none of its nights flagged", []int{}, false, "was never confirmed by a flagged night"},
		{"flags only long before", []int{3}, false, "was never confirmed"},
		{"verdicts not known: as large as the bound", nil, true, "still regressed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := mustDetect(t, hist, []float64{98}, Config{HigherIsBetter: true, Flagged: tt.flagged})
			if d.Flagged != tt.red || !strings.Contains(d.Why, tt.why) {
				t.Errorf("Detect(flagged %v) = flagged %v, %q; want flagged %v, containing %q", tt.flagged, d.Flagged, d.Why, tt.red, tt.why)
			}
		})
	}
}

// Accepting a regression is a known change: the nights after it are the
// new level, and tonight at that level passes.
func TestDetectAccepted(t *testing.T) {
	t.Parallel()
	hist := cat(noisy(20, 100), noisy(10, 94))
	cfg := Config{HigherIsBetter: true, MinEffectPct: 3}
	if d := mustDetect(t, hist, []float64{94}, cfg); !d.Flagged {
		t.Fatalf("Detect(unaccepted) = %q; want flagged", d.Why)
	}
	cfg.Known = []int{20}
	d := mustDetect(t, hist, []float64{94}, cfg)
	if d.Flagged || d.Open != nil || d.RegimeStart != 20 {
		t.Errorf("Detect(accepted at night 20) = flagged %v, open %v, regime from %d: %q; want a pass against the nights since", d.Flagged, d.Open, d.RegimeStart, d.Why)
	}
	// A known change with a new recipe: two nights after it are the level.
	cfg.Known = []int{28}
	d = mustDetect(t, hist, []float64{94}, cfg)
	if d.RegimeStart != 28 || d.RegimeNights != 2 || d.Flagged {
		t.Errorf("Detect(recipe changed 2 nights ago) = regime %d+%d, flagged %v; want the 2 nights since", d.RegimeStart, d.RegimeNights, d.Flagged)
	}
}

func TestDetectTwoNights(t *testing.T) {
	t.Parallel()
	hist := append(noisy(30, 100), 98.2)
	d := mustDetect(t, hist, []float64{98.2}, Config{HigherIsBetter: true})
	if !d.Flagged || d.Rule != RuleTwoNight || !(d.LastGood < 30 && 30 <= d.FirstBad) {
		t.Errorf("Detect(two nights 1.8 %% down) = %v %q, range (%d, %d]; want two-night, the range holding the night before", d.Flagged, d.Rule, d.LastGood, d.FirstBad)
	}
	if d := mustDetect(t, hist, []float64{98.2}, Config{HigherIsBetter: true, SingleNightOnly: true}); d.Flagged {
		t.Errorf("single-night only flagged %q", d.Why)
	}
}

// Tonight is the median of its repetitions, as a past night is.
func TestDetectRepetitionsMedian(t *testing.T) {
	t.Parallel()
	d := mustDetect(t, noisy(30, 100), []float64{100, 60, 99.5}, Config{HigherIsBetter: true})
	if d.Flagged || math.Abs(d.Tonight-99.5) > 1e-9 {
		t.Errorf("Detect(reps 100, 60, 99.5) = tonight %v, flagged %v; want the median 99.5, not flagged", d.Tonight, d.Flagged)
	}
}

func TestDetectYoungAndRejection(t *testing.T) {
	t.Parallel()
	if d := mustDetect(t, noisy(4, 100), []float64{50}, Config{HigherIsBetter: true}); d.Status != StatusInsufficientHistory || !strings.Contains(d.Why, "first nights: no regression check yet") {
		t.Errorf("Detect(4 nights) = %v %q", d.Status, d.Why)
	}
	// Below 15 nights nothing is set aside, whatever a night looks like.
	young := append(noisy(8, 100), 80)
	if d := mustDetect(t, young, []float64{100}, Config{HigherIsBetter: true}); d.Outliers != 0 {
		t.Errorf("Detect(9 nights, one far off) set %d aside", d.Outliers)
	}
	// From 15 nights on, nights far from their regime's median only
	// when asked; a gross outlier (far from its neighbours) by default.
	old := append(noisy(20, 100), 80, 100)
	if d := mustDetect(t, old, []float64{100}, Config{HigherIsBetter: true, OutlierMADs: 4, GrossMADs: -1}); d.Outliers != 1 {
		t.Errorf("Detect(22 nights, one far off, 4 MADs) set %d aside, want 1", d.Outliers)
	}
	if d := mustDetect(t, old, []float64{100}, Config{HigherIsBetter: true, GrossMADs: -1}); d.Outliers != 0 {
		t.Errorf("Detect(22 nights, one far off, no gross outliers) set %d aside, want 0", d.Outliers)
	}
	if d := mustDetect(t, old, []float64{100}, Config{HigherIsBetter: true}); d.Outliers != 1 {
		t.Errorf("Detect(22 nights, one far off) set %d aside by default, want 1", d.Outliers)
	}
}

// Nights that wander (AR(1) 0.8) are allowed for in the bounds.
func TestDetectAutocorrelation(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	hist := make([]float64, 30)
	e := 0.0
	for i := range hist {
		e = 0.8*e + 0.6*0.01*rng.NormFloat64()
		hist[i] = 100 * math.Exp(e)
	}
	d := mustDetect(t, hist, []float64{hist[29]}, Config{HigherIsBetter: true})
	if !(d.Autocorr > 0.3) || !strings.Contains(d.Why, "autocorrelation") {
		t.Errorf("Detect(AR(1) 0.8 nights) autocorrelation = %v, %q; want it seen", d.Autocorr, d.Why)
	}
}

func TestDetectErrors(t *testing.T) {
	t.Parallel()
	hist := noisy(12, 100)
	tests := []struct {
		name             string
		history, tonight []float64
		cfg              Config
		want             string
	}{
		{name: "no tonight", history: hist, want: "no value for tonight"},
		{name: "zero night", history: append(noisy(12, 100), 0), tonight: []float64{1}, want: "past night 13 is 0"},
		{name: "NaN rep", history: hist, tonight: []float64{1, math.NaN()}, want: "tonight's repetition 2 is NaN"},
		{name: "bad rate", history: hist, tonight: []float64{1}, cfg: Config{FalseAlarmRate: 0.7}, want: "false-alarm rate 0.7"},
		{name: "bad floor", history: hist, tonight: []float64{1}, cfg: Config{MinEffectPct: -1}, want: "minimum effect -1%"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Detect(tt.history, tt.tonight, tt.cfg)
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Detect() error = %v, want ErrInput containing %q", err, tt.want)
			}
		})
	}
}

// One slow run raises the alarm; the re-run's two normal runs clear it.
// Three slow runs keep it.
func TestRerun(t *testing.T) {
	t.Parallel()
	hist := noisy(30, 100)
	cfg := Config{HigherIsBetter: true}
	first := mustDetect(t, hist, []float64{95}, cfg)
	if !first.Flagged {
		t.Fatalf("Detect(95) = %q; want flagged", first.Why)
	}
	d, err := Rerun(first, hist, []float64{95, 100, 99.8}, cfg)
	if err != nil || d.Flagged || !strings.Contains(d.Why, "not flagged after a re-run on alarm") {
		t.Errorf("Rerun(95, 100, 99.8) = %v, %q, %v; want cleared", d.Flagged, d.Why, err)
	}
	d, err = Rerun(first, hist, []float64{95, 95.2, 94.9}, cfg)
	if err != nil || !d.Flagged || d.Reps != 3 || !strings.Contains(d.Why, "re-run on alarm: 3 repetitions") {
		t.Errorf("Rerun(95, 95.2, 94.9) = %v, %d reps, %q, %v; want flagged on 3", d.Flagged, d.Reps, d.Why, err)
	}
	if d.PNight < first.PNight/AlarmFactor {
		t.Errorf("Rerun p %v below the first look's %v / %v: the combined p-value is max(p₁/%v, p₂)", d.PNight, first.PNight, AlarmFactor, AlarmFactor)
	}
	pass := mustDetect(t, hist, []float64{100}, cfg)
	if pass.Alarm {
		t.Fatalf("Detect(100) raised an alarm: %q", pass.Why)
	}
	if d, _ := Rerun(pass, hist, []float64{100, 50, 50}, cfg); d.Flagged {
		t.Errorf("Rerun of a night that raised no alarm flagged it")
	}
	// 98.2 is not flagged but raises the alarm (p within 4α); three runs
	// that agree on it keep it unflagged: their agreement says the night,
	// not the run, is off, and the night's noise is the past nights'.
	alarm := mustDetect(t, hist, []float64{98.2}, cfg)
	if alarm.Flagged || !alarm.Alarm {
		t.Fatalf("Detect(98.2) = flagged %v, alarm %v, p %v; want an alarm only", alarm.Flagged, alarm.Alarm, alarm.PNight)
	}
	if d, _ := Rerun(alarm, hist, []float64{98.2, 98.1, 98.3}, cfg); d.Flagged {
		t.Errorf("Rerun(98.2, 98.1, 98.3) = %q; want not flagged", d.Why)
	}
	// Three runs well below confirm it.
	if d, _ := Rerun(alarm, hist, []float64{98.2, 96.5, 96.8}, cfg); !d.Flagged {
		t.Errorf("Rerun(98.2, 96.5, 96.8) = %q; want flagged", d.Why)
	}
}

// A night's variance shrinks with its runs only by their run-to-run part,
// judged from the fresh runs' spread and never past what a past night's
// variance allows.
func TestNightVar(t *testing.T) {
	t.Parallel()
	s2 := 1e-4
	sd := 0.005 // two fresh runs 1 % apart: variance s2/2
	tests := []struct {
		name         string
		reps, spread []float64
		pastReps     int
		want         float64
	}{
		{name: "one run", reps: []float64{0}, spread: []float64{0}, pastReps: 1, want: s2},
		{name: "runs agree", reps: []float64{0, 0, 0}, spread: []float64{0, 0}, pastReps: 1, want: s2},
		{name: "half the variance is the runs'", reps: []float64{0, sd, -sd}, spread: []float64{sd, -sd}, pastReps: 1, want: s2 - (1-0.4487)*s2/2},
		{name: "runs spread wider than nights", reps: []float64{0, 0.05, -0.05}, spread: []float64{0.05, -0.05}, pastReps: 1, want: 0.4487 * 0.005},
		{name: "past nights had as many runs", reps: []float64{0, sd, -sd}, spread: []float64{sd, -sd}, pastReps: 3, want: s2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := nightVar(s2, tt.reps, tt.spread, tt.pastReps); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("nightVar() = %v, want %v", got, tt.want)
			}
		})
	}
}

// Heavy-tailed nights give fewer degrees of freedom than normal ones, and
// so do autocorrelated ones.
func TestEffectiveDF(t *testing.T) {
	t.Parallel()
	normal := []float64{-1.2, -0.8, -0.5, -0.3, -0.1, 0.1, 0.3, 0.5, 0.8, 1.2}
	heavy := []float64{-0.3, -0.2, -0.1, -0.1, 0, 0, 0.1, 0.1, 0.2, 4}
	sums := func(x []float64) (ss, ss4 float64) {
		for _, v := range x {
			ss += v * v
			ss4 += v * v * v * v
		}
		return ss, ss4
	}
	ss, ss4 := sums(normal)
	if got := effectiveDF(9, 10, ss, ss4, 0); got != 9 {
		t.Errorf("effectiveDF(normal-looking) = %v, want 9", got)
	}
	if got := effectiveDF(9, 10, ss, ss4, 0.5); !(got < 6) {
		t.Errorf("effectiveDF(ρ 0.5) = %v, want below 6", got)
	}
	ss, ss4 = sums(heavy)
	if got := effectiveDF(9, 10, ss, ss4, 0); !(got < 3) {
		t.Errorf("effectiveDF(one night far out) = %v, want below 3", got)
	}
}

// The budget's p-value is the night's up to the false-alarm rate and far
// larger in the tail; the verdict does not change.
func TestSpendable(t *testing.T) {
	t.Parallel()
	hist := noisy(30, 100)
	// Gross drops wait a night for confirmation (TestSpike); the budget
	// is the same for them.
	cfg := Config{HigherIsBetter: true, GrossMADs: -1}
	for _, v := range []float64{99, 98.6, 97, 95, 90} {
		d := mustDetect(t, hist, []float64{v}, cfg)
		switch {
		case d.PNight >= 0.01 && d.P != d.PNight:
			t.Errorf("tonight %v: P %v, PNight %v; want equal above the rate", v, d.P, d.PNight)
		case d.PNight < 0.01 && !(d.P > d.PNight && d.P <= 0.01):
			t.Errorf("tonight %v: P %v, PNight %v; want P in (PNight, 0.01]", v, d.P, d.PNight)
		}
		if d.Flagged != (d.P <= 0.01) {
			t.Errorf("tonight %v: flagged %v with P %v", v, d.Flagged, d.P)
		}
	}
	// A lone regression among 60 tests spends 0.05/60 of a 5 % budget:
	// it needs a drop 2 to 3 times the one that flags the night.
	var flag, spend float64
	for v := 100.0; v > 80 && spend == 0; v -= 0.01 {
		d := mustDetect(t, hist, []float64{v}, Config{HigherIsBetter: true, SingleNightOnly: true})
		if flag == 0 && d.Flagged {
			flag = -math.Log(v / 100)
		}
		if d.P <= 0.05/60 {
			spend = -math.Log(v / 100)
		}
	}
	if r := spend / flag; !(r >= 2 && r <= 3) {
		t.Errorf("the drop the budget spends on is %v times the one that flags, want 2 to 3", r)
	}
}

// A few nights that trend every night have a lag-1 autocorrelation that
// the bias correction pushes past 1; the noise must stay a number.
func TestTrendingYoungHistoryKeepsNoiseFinite(t *testing.T) {
	t.Parallel()
	d, err := Detect([]float64{90, 91, 92, 93, 94}, []float64{95}, Config{HigherIsBetter: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]float64{"NoiseCV": d.NoiseCV, "P": d.P, "PNight": d.PNight, "Autocorr": d.Autocorr, "ThresholdPct": d.ThresholdPct} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Errorf("%s = %v for five trending nights, want a finite number (%s)", name, v, d.Why)
		}
	}
}

// Six nights that happen to trend say nothing reliable of the nights'
// autocorrelation; allowing for the most of it would let a halving pass.
func TestYoungTrendDoesNotHideAHalving(t *testing.T) {
	t.Parallel()
	d, err := Detect([]float64{95.8, 96.0, 96.2, 96.3, 96.5, 96.7}, []float64{43.6}, Config{HigherIsBetter: true})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Flagged {
		t.Errorf("a 55%% drop after six trending nights was not flagged: %s", d.Why)
	}
}

// Ten one-percent nights that drift down a little read as strongly
// autocorrelated; the bound must still catch a halving, on its first
// night and the next.
func TestYoungDriftDoesNotHideAHalving(t *testing.T) {
	t.Parallel()
	hist := []float64{101.2, 100.6, 100.92, 99.94, 99.07, 99.74, 99.9, 98.48, 97.78, 98.41}
	cfg := Config{HigherIsBetter: true, MinEffectPct: 25}
	d := mustDetect(t, hist, []float64{43.88}, cfg)
	if !d.Flagged && !d.Unconfirmed {
		t.Fatalf("a 56%% drop after ten drifting one-percent nights was passed: %s", d.Why)
	}
	cfg.Flagged, cfg.Unconfirmed = nil, nil
	if d.Flagged {
		cfg.Flagged = []int{len(hist)}
	} else {
		cfg.Unconfirmed = []int{len(hist)}
	}
	cfg.Carried = d.Carry
	d = mustDetect(t, append(slices.Clone(hist), 43.88), []float64{43.61}, cfg)
	if !d.Flagged {
		t.Errorf("the second night of a 56%% drop after ten drifting one-percent nights was not flagged: %s", d.Why)
	}
}
