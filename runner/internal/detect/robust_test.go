package detect

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// gauss is n nights around level with a log-normal spread of cv, drawn
// from a fixed seed.
func gauss(seed uint64, n int, level, cv float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]float64, n)
	for i := range out {
		out[i] = level * math.Exp(cv*rng.NormFloat64())
	}
	return out
}

// replayed is one night of a hand-made series judged as the gate judges
// it, with the verdicts of the nights before and the regression they
// carried on.
type replayed struct {
	d     Decision
	value float64
}

// replay judges every night of values from the fifth on against at most
// 30 nights before it, known are night numbers of known changes.
func replay(t *testing.T, values []float64, known []int, cfg Config) []replayed {
	t.Helper()
	type past struct {
		night                int
		value                float64
		flagged, unconfirmed bool
		carry                *Carried // Index a night number
	}
	var hist []past
	var out []replayed
	for n, v := range values {
		c := cfg
		c.Flagged, c.Unconfirmed, c.Known = []int{}, nil, nil
		vals := make([]float64, len(hist))
		for i, h := range hist {
			vals[i] = h.value
			if h.flagged {
				c.Flagged = append(c.Flagged, i)
			}
			if h.unconfirmed {
				c.Unconfirmed = append(c.Unconfirmed, i)
			}
			if i > 0 && slices.Contains(known, h.night) {
				c.Known = append(c.Known, i)
			}
		}
		if len(hist) > 0 && hist[len(hist)-1].carry != nil {
			cc := *hist[len(hist)-1].carry
			cc.Index -= hist[0].night
			c.Carried = &cc
		}
		p := past{night: n, value: v}
		var d Decision
		if len(hist) >= DefaultMinHistory {
			var err error
			if d, err = Detect(vals, []float64{v}, c); err != nil {
				t.Fatalf("night %d: %v", n, err)
			}
			p.flagged, p.unconfirmed = d.Flagged, d.Unconfirmed
			if d.Carry != nil {
				cc := *d.Carry
				cc.Index += hist[0].night
				p.carry = &cc
			}
		}
		out = append(out, replayed{d, v})
		hist = append(hist, p)
		if len(hist) > 30 {
			hist = hist[1:]
		}
	}
	return out
}

func flaggedNights(rs []replayed, from, to int) int {
	n := 0
	for _, r := range rs[from:to] {
		if r.d.Flagged {
			n++
		}
	}
	return n
}

// One night 40 % off does not blind the next month: it is set aside from
// the spread, and a drop of 3.5 % five nights later is caught at once; a
// drop of 12 % on the second night (the first waits for confirmation).
func TestGrossOutlierThenStep(t *testing.T) {
	t.Parallel()
	hist := gauss(1, 30, 100, 0.01)
	hist[24] = 60 // five nights back
	d := mustDetect(t, hist, []float64{96.5}, Config{HigherIsBetter: true, Flagged: []int{}})
	if !d.Flagged || d.Outliers != 1 || d.NoiseCV > 0.02 {
		t.Errorf("Detect(one −40%% night, then −3.5%%) = flagged %v, %d set aside, noise %.3f: %s; want flagged, the night set aside, noise near 1%%",
			d.Flagged, d.Outliers, d.NoiseCV, d.Why)
	}
	blind := mustDetect(t, hist, []float64{96.5}, Config{HigherIsBetter: true, Flagged: []int{}, GrossMADs: -1})
	if blind.Flagged || blind.NoiseCV < 0.05 {
		t.Errorf("without setting aside: flagged %v, noise CV %.3f; the test's outlier should blind it", blind.Flagged, blind.NoiseCV)
	}
	v := gauss(1, 30, 100, 0.01)
	v[24] = 60
	s := replay(t, append(v, 88, 88.2, 87.9), nil, Config{HigherIsBetter: true})
	if !s[30].d.Unconfirmed || !s[31].d.Flagged || !s[32].d.Flagged {
		t.Errorf("−12%% after a −40%% night: unconfirmed %v, then flagged %v, %v: %s; want unconfirmed, then flagged", s[30].d.Unconfirmed, s[31].d.Flagged, s[32].d.Flagged, s[31].d.Why)
	}
	// The same night tonight is a spike no night confirms: unconfirmed,
	// not flagged; the next night as bad confirms it.
	s = replay(t, append(gauss(2, 30, 100, 0.01), 60, 100, 100, 60, 61, 60), nil, Config{HigherIsBetter: true})
	if r := s[30]; r.d.Flagged || !r.d.Unconfirmed || !strings.HasPrefix(r.d.Why, "unconfirmed") {
		t.Errorf("a lone −40%% night = flagged %v, unconfirmed %v: %s; want unconfirmed", r.d.Flagged, r.d.Unconfirmed, r.d.Why)
	}
	if n := flaggedNights(s, 31, 33); n != 0 {
		t.Errorf("%d of the two nights back at the level after a spike flagged", n)
	}
	if r := s[34]; !r.d.Flagged || r.d.FirstBad != 29 {
		t.Errorf("the second −40%% night in a row = flagged %v, first bad %d: %s; want flagged from the night before", r.d.Flagged, r.d.FirstBad, r.d.Why)
	}
}

// Nights on two pools of machines 25 % apart (24 % as measured), at random: each pool's
// nights are judged at their own level, so the spread is that within a
// pool and a 5 % drop shows on either.
func TestPoolSwitch(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 3))
	hist := gauss(3, 30, 100, 0.01)
	fast := 0
	for i := range hist {
		if rng.IntN(4) == 0 {
			hist[i] *= 0.75 // lower is better: the fast pool
			fast++
		}
	}
	if fast < 5 {
		t.Fatalf("the test's pools: %d fast nights", fast)
	}
	cfg := Config{Flagged: []int{}}
	for _, tt := range []struct {
		tonight float64
		flagged bool
	}{
		// A night on the smaller pool fails only when it is also worse
		// than the larger pool's level (its own pool's level comes from
		// a few nights): on the faster pool, a drop waits for a night
		// on the slower one.
		{100, false}, {75, false}, {105, true}, {0.75 * 105, false},
	} {
		d := mustDetect(t, hist, []float64{tt.tonight}, cfg)
		if d.Flagged != tt.flagged || !strings.Contains(d.Why, "two pools of machines 24% apart") {
			t.Errorf("Detect(%v) = flagged %v: %s; want flagged %v, judged on its pool", tt.tonight, d.Flagged, d.Why, tt.flagged)
		}
	}
	// Without pools in the model, the pools' distance would be noise.
	lh, _ := logs(hist, "night")
	if _, sd := meanSD(lh); sd < 0.08 {
		t.Errorf("the test's pools: spread %.3f, want wide", sd)
	}
	// A step that stays is no pool: one run of nights.
	step, _ := logs(cat(gauss(4, 20, 100, 0.01), gauss(5, 10, 75, 0.01)), "night")
	if p := poolsOf(step, nil, -1); p != nil {
		t.Errorf("poolsOf(a step) = %+v, want none", p)
	}
	// Nights many times off, in runs as a pool's come, ran another
	// benchmark: no pool of machines is sixteen times slower. At 25 %
	// the same nights are a pool.
	for _, tt := range []struct {
		factor float64
		pool   bool
	}{{0.75, true}, {16, false}} {
		v := gauss(6, 30, 100, 0.01)
		for _, i := range []int{2, 3, 9, 15, 16, 22, 27} {
			v[i] *= tt.factor
		}
		lv, _ := logs(v, "night")
		if p := poolsOf(lv, nil, -1); (p != nil) != tt.pool {
			t.Errorf("poolsOf(nights %v times the rest, in runs) = %+v, want a pool %v", tt.factor, p, tt.pool)
		}
	}
}

// A fleet change: the level shifts and the nights after are four times
// quieter. A 4 % drop, three times the new noise, is caught a fortnight
// after the change, not once the noisy nights have left the history.
func TestEraChange(t *testing.T) {
	t.Parallel()
	hist := cat(gauss(6, 16, 100, 0.04), gauss(7, 14, 80, 0.01))
	d := mustDetect(t, hist, []float64{80 * 0.96}, Config{HigherIsBetter: true, Flagged: []int{}})
	if !d.Flagged || d.NoiseCV > 0.02 {
		t.Errorf("Detect(a quiet era, then −4%%) = flagged %v, noise %.3f: %s; want flagged on the new era's noise", d.Flagged, d.NoiseCV, d.Why)
	}
}

// A regression held 40 nights stays red on every one of them, though its
// good nights leave the 30-night history after 30, and the annotation
// says since when and by how much; once fixed it stays red until
// FixedNights nights in a row look fixed, saying so, and green after.
func TestRegressionHeld40NightsThenFixed(t *testing.T) {
	t.Parallel()
	v := cat(gauss(8, 30, 100, 0.01), gauss(9, 40, 94, 0.01), gauss(10, 20, 100, 0.01))
	s := replay(t, v, nil, Config{HigherIsBetter: true})
	if n := flaggedNights(s, 30, 70); n < 39 {
		t.Errorf("%d of the 40 nights of the regression flagged, want at least 39 (the first may wait for the second)", n)
	}
	late := s[69].d // its good nights left the history 10 nights ago
	if !late.Flagged || late.Rule != RuleOpen || late.Carry == nil || !strings.Contains(late.Why, "began before the 30 nights of the history") || !strings.Contains(late.Why, "the level before") {
		t.Errorf("night 40 of the regression = flagged %v, rule %q: %s; want still regressed, saying since when", late.Flagged, late.Rule, late.Why)
	}
	// Held: no re-run can overturn it, and a build's budget weighs it by
	// the evidence of its 40 nights, not by tonight's alone.
	if !late.Held || late.Alarm || !(late.P < 1e-4) || late.Carry == nil || !late.Carry.Held || late.Carry.LevelNights < minCarryLevel {
		t.Errorf("night 40 of the regression = held %v, alarm %v, P %v, carry %+v; want held, no alarm, P of its nights together, the level's nights known", late.Held, late.Alarm, late.P, late.Carry)
	}
	if c := late.Carry; c == nil || math.Abs(math.Exp(c.Level)-100) > 1.5 || c.WorsePct < 4 || c.WorsePct > 8 {
		t.Errorf("carried %+v, want the level near 100 and a worsening near 6%%", c)
	}
	if n := flaggedNights(s, 70, 70+FixedNights-1); n != FixedNights-1 || !strings.Contains(s[70].d.Why, "fixed only once") {
		t.Errorf("%d of the %d nights after the fix before it counts as fixed flagged, want all, saying why: %s", n, FixedNights-1, s[70].d.Why)
	}
	if n := flaggedNights(s, 70+FixedNights-1, 90); n != 0 {
		t.Errorf("%d of the nights after the fix counted flagged", n)
	}
	if d := s[70+FixedNights-1].d; d.Carry != nil || !strings.HasPrefix(d.Why, "fixed: ") {
		t.Errorf("night %d after the fix: carry %+v: %s; want fixed", FixedNights, d.Carry, d.Why)
	}
	if s[75].d.Carry != nil {
		t.Errorf("the regression is still carried five nights after the fix: %+v", s[75].d.Carry)
	}
}

// An accepted regression (a known change where its level begins) is
// settled: the nights after pass on the new level.
func TestRegressionAccepted(t *testing.T) {
	t.Parallel()
	v := cat(gauss(11, 30, 100, 0.01), gauss(12, 40, 94, 0.01))
	s := replay(t, v, []int{45}, Config{HigherIsBetter: true})
	if n := flaggedNights(s, 31, 45); n != 14 {
		t.Errorf("%d of the 14 nights before the acceptance flagged", n)
	}
	if n := flaggedNights(s, 46, 70); n != 0 {
		t.Errorf("%d of the 24 nights after the acceptance flagged", n)
	}
	if s[50].d.Carry != nil {
		t.Errorf("an accepted regression is still carried: %+v", s[50].d.Carry)
	}
}

// An alarm its next nights do not confirm holds nothing: nights back at
// the level or a little worse after it are not red, and it is over
// within pendingNights.
func TestUnconfirmedAlarmIsOver(t *testing.T) {
	t.Parallel()
	v := append(gauss(13, 30, 100, 0.01), 96)
	v = append(v, gauss(14, 10, 99.6, 0.01)...)
	s := replay(t, v, nil, Config{HigherIsBetter: true})
	if !s[30].d.Flagged || s[30].d.Carry == nil {
		t.Fatalf("night 30, 4 %% worse = flagged %v, carry %+v: %s; want flagged and carried", s[30].d.Flagged, s[30].d.Carry, s[30].d.Why)
	}
	if n := flaggedNights(s, 31, 41); n != 0 {
		t.Errorf("%d of the 10 nights after an unconfirmed alarm flagged", n)
	}
	over := slices.IndexFunc(s[31:], func(r replayed) bool { return r.d.Carry == nil })
	if over < 0 || over+1 > pendingNights {
		t.Errorf("the alarm is still carried %d nights on, want over within %d", over+1, pendingNights)
	}
	for _, r := range s[31:41] {
		if r.d.Carry != nil && r.d.Carry.Held {
			t.Errorf("an unconfirmed alarm held: %s", r.d.Why)
		}
	}
	// Nights a little worse still, 1.2 %, neither hold it nor are far
	// enough off to keep it pending: it is over on its fourth night.
	v = append(gauss(13, 30, 100, 0.01), 96, 98.8, 98.8, 98.8, 98.8, 98.8)
	s = replay(t, v, nil, Config{HigherIsBetter: true})
	if n := flaggedNights(s, 31, 36); n != 0 {
		t.Errorf("%d of the nights a little worse after an unconfirmed alarm flagged", n)
	}
	if d := s[30+pendingNights].d; d.Carry != nil || !strings.Contains(d.Why, "did not confirm it") {
		t.Errorf("night %d after the alarm: carry %+v: %s; want over, unconfirmed", pendingNights, d.Carry, d.Why)
	}
	if d := s[30+pendingNights-1].d; d.Carry == nil {
		t.Errorf("night %d after the alarm: no longer carried, want pending: %s", pendingNights-1, d.Why)
	}
}

// A held night's p-value, the one a build's budget spends, is the
// strongest evidence its nights have given, not tonight's nights alone:
// a regression held on strong nights is not released on a weak one.
func TestHeldNightSpendsItsEvidence(t *testing.T) {
	t.Parallel()
	hist := cat(gauss(15, 20, 100, 0.01), gauss(16, 10, 98.8, 0.01))
	judge := func(p float64) Decision {
		c := &Carried{Index: 20, Level: math.Log(100), LevelNights: 20, WorsePct: 3, Held: true, P: p}
		return mustDetect(t, hist, []float64{98.8}, Config{HigherIsBetter: true, Flagged: []int{20}, Carried: c})
	}
	weak := judge(0)
	if !weak.Flagged || !weak.Held || !(weak.P > 1e-4) {
		t.Fatalf("held, its nights 1.2 %% worse = flagged %v, held %v, P %v: %s; want red on weak evidence of its own", weak.Flagged, weak.Held, weak.P, weak.Why)
	}
	if strong := judge(1e-12); !strong.Flagged || !(strong.P < weak.P/100) || strong.Carry == nil || strong.Carry.P != 1e-12 {
		t.Errorf("held on evidence of 1e-12: flagged %v, P %v (weak alone %v), carry %+v; want the evidence spent and carried on", strong.Flagged, strong.P, weak.P, strong.Carry)
	}
}

// A young recipe whose throughput halves stays red from the step's
// night on: the step's first nights are no part of the spread its next
// nights are judged with, however noisy the few nights before it.
func TestYoungHalvingStaysRed(t *testing.T) {
	t.Parallel()
	for _, cv := range []float64{0.01, 0.03, 0.06} {
		values := append(gauss(3, 6, 100, cv), gauss(4, 4, 44, cv)...)
		rs := replay(t, values, nil, Config{HigherIsBetter: true, MinEffectPct: 25})
		for i := 6; i < len(rs); i++ {
			if !rs[i].d.Flagged {
				t.Errorf("noise %v: night %d of a halving after six good nights passed: %s", cv, i-5, rs[i].d.Why)
			}
		}
	}
}

// A night the plain rule alarms on beside a pending regression is run
// again, though the regression alone would not have it: the re-run that
// agrees with the alarm flags it, and the regression is carried on.
func TestAlarmBesidePendingIsRunAgain(t *testing.T) {
	t.Parallel()
	hist := append(gauss(21, 29, 100, 0.01), 96)
	cfg := Config{HigherIsBetter: true, Flagged: []int{29},
		Carried: &Carried{Index: 29, Level: math.Log(100), LevelNights: 29, WorsePct: 4}}
	first := mustDetect(t, hist, []float64{97.8}, cfg)
	if first.Flagged || !first.Alarm || first.Carry == nil || first.Carry.Index != 29 {
		t.Fatalf("Detect(97.8) beside a pending −4%% = flagged %v, alarm %v, carry %+v: %s; want an alarm, the regression carried on", first.Flagged, first.Alarm, first.Carry, first.Why)
	}
	d, err := Rerun(first, hist, []float64{97.8, 97.1, 97.3}, cfg)
	if err != nil || !d.Flagged || d.Carry == nil || d.Carry.Index != 29 {
		t.Errorf("Rerun(97.8, 97.1, 97.3) = flagged %v, carry %+v, %v: %s; want flagged, the regression carried on", d.Flagged, d.Carry, err, d.Why)
	}
	d, err = Rerun(first, hist, []float64{97.8, 99.9, 100.1}, cfg)
	if err != nil || d.Flagged || d.Carry == nil {
		t.Errorf("Rerun(97.8, 99.9, 100.1) = flagged %v, carry %+v, %v: %s; want cleared, the regression still pending", d.Flagged, d.Carry, err, d.Why)
	}
}

// Two nights alike, each 2.5 times the noise worse, are judged by both
// lying beyond that, which heavy-tailed nights seldom do twice in a row;
// a night far off beside one barely worse is judged by their average.
func TestTwoNightTests(t *testing.T) {
	t.Parallel()
	level := make([]float64, 30)
	nz := noise{sd: 0.01, nu: 6}
	lv := nz.sd * nz.sd * medianVar(len(level))
	mean := func(prev, ton float64) float64 {
		return tSurvival((prev+ton)/2/math.Sqrt(nz.sd*nz.sd/2+lv), nz.nu)
	}
	both := func(prev, ton float64) float64 {
		z := min(prev, ton) / math.Sqrt(nz.sd*nz.sd+lv)
		return bothBeyond(z, lv/(nz.sd*nz.sd+lv), nz.nu)
	}
	tests := []struct {
		name      string
		prev, ton float64 // how much worse, on the log scale
		want      float64
	}{
		{"alike", 0.025, 0.025, 2 * both(0.025, 0.025)},
		{"one far", 0.004, 0.06, 2 * mean(0.004, 0.06)},
		{"tonight better", 0.03, -0.001, 1},
	}
	for _, tt := range tests {
		p, _ := twoNight(append(slices.Clone(level), -tt.prev), -tt.ton, nz.sd*nz.sd, nz, 1, 0.008)
		if math.Abs(p-tt.want) > 1e-12 {
			t.Errorf("%s: twoNight = %.4g, want %.4g", tt.name, p, tt.want)
		}
	}
	if a, b := both(0.025, 0.025), mean(0.025, 0.025); !(a < b/2) {
		t.Errorf("two nights 2.5σ worse: both beyond %.3g, average %.3g; want both beyond stronger, by more than its Bonferroni share", a, b)
	}
}

// A false alarm its next nights do not repeat is never held, though they
// are a little worse.
func TestFalseAlarmDoesNotConfirmItself(t *testing.T) {
	t.Parallel()
	alarms := 0
	for seed := uint64(60); seed < 100; seed++ {
		v := cat(gauss(seed, 30, 100, 0.01), []float64{96.5}, gauss(seed+100, 15, 99.6, 0.01))
		s := replay(t, v, nil, Config{HigherIsBetter: true})
		if !s[30].d.Flagged {
			continue // the nights before were noisier than most
		}
		alarms++
		for i, r := range s[31:] {
			if r.d.Held || r.d.Flagged {
				t.Errorf("seed %d: night %d after a false alarm held %v, flagged %v: %s", seed, i+1, r.d.Held, r.d.Flagged, r.d.Why)
			}
		}
	}
	if alarms < 30 {
		t.Errorf("%d of 40 nights 3.5 times the noise worse flagged, want most: the test tests nothing", alarms)
	}
}
