package detect

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// alternating returns n nights (n even) at 100·e^(±d), so the log mean is
// ln 100 exactly and the log standard deviation d·√(n/(n−1)).
func alternating(n int, d float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		s := d
		if i%2 == 1 {
			s = -d
		}
		out[i] = 100 * math.Exp(s)
	}
	return out
}

func with(h []float64, v ...float64) []float64 {
	return append(append([]float64(nil), h...), v...)
}

// Twelve nights at ±1 %: s = 0.01·√(12/11); the single-night threshold at a
// 0.5 % one-sided rate is t(0.995, 11 df) = 3.105807 (tables) times
// s·√(1 + 1/12), i.e. a log drop of 0.033764, 3.320 % below 100.
var (
	hist12    = alternating(12, 0.01)
	sd12      = 0.01 * math.Sqrt(12.0/11)
	thresh12  = 3.105807 * sd12 * math.Sqrt(1+1.0/12)
	thresh12P = -math.Expm1(-thresh12) * 100
)

func TestDetect(t *testing.T) {
	t.Parallel()
	higher := Config{HigherIsBetter: true, MinHistory: 10}
	tests := []struct {
		name    string
		history []float64
		tonight []float64
		cfg     Config
		want    Decision
		why     string
	}{
		{
			name: "clean step", history: hist12, tonight: []float64{90}, cfg: higher,
			want: Decision{Status: StatusFlagged, Flagged: true, Rule: RuleSingle, Baseline: 100, Tonight: 90,
				NoiseCV: math.Sqrt(math.Expm1(sd12 * sd12)), ThresholdPct: thresh12P, NoiseThresholdPct: thresh12P,
				DeltaPct: -10, WorsePct: 10, Nights: 12, Used: 12, Reps: 1},
			why: "beyond both the 0% floor and the 3.3% the noise allows",
		},
		{
			name: "within the noise", history: hist12, tonight: []float64{97}, cfg: higher,
			want: Decision{Status: StatusOK, Baseline: 100, Tonight: 97,
				NoiseCV: math.Sqrt(math.Expm1(sd12 * sd12)), ThresholdPct: thresh12P, NoiseThresholdPct: thresh12P,
				DeltaPct: -3, WorsePct: 3, Nights: 12, Used: 12, Reps: 1},
			why: "within the 3.3% the noise allows",
		},
		{
			name: "below the floor", history: hist12, tonight: []float64{95}, cfg: Config{HigherIsBetter: true, MinEffectPct: 10, MinHistory: 10},
			want: Decision{Status: StatusOK, Baseline: 100, Tonight: 95,
				NoiseCV: math.Sqrt(math.Expm1(sd12 * sd12)), ThresholdPct: 10, NoiseThresholdPct: thresh12P,
				DeltaPct: -5, WorsePct: 5, Nights: 12, Used: 12, Reps: 1},
			why: "below the 10% floor",
		},
		{
			name: "latency up is worse", history: hist12, tonight: []float64{110}, cfg: Config{MinHistory: 10},
			want: Decision{Status: StatusFlagged, Flagged: true, Rule: RuleSingle, Baseline: 100, Tonight: 110,
				NoiseCV: math.Sqrt(math.Expm1(sd12 * sd12)), ThresholdPct: math.Expm1(thresh12) * 100, NoiseThresholdPct: math.Expm1(thresh12) * 100,
				DeltaPct: 10, WorsePct: 10, Nights: 12, Used: 12, Reps: 1},
			why: "10.0% worse",
		},
		{
			name: "latency down is better", history: hist12, tonight: []float64{90}, cfg: Config{MinHistory: 10},
			want: Decision{Status: StatusOK, Baseline: 100, Tonight: 90,
				NoiseCV: math.Sqrt(math.Expm1(sd12 * sd12)), ThresholdPct: math.Expm1(thresh12) * 100, NoiseThresholdPct: math.Expm1(thresh12) * 100,
				DeltaPct: -10, WorsePct: -10, Nights: 12, Used: 12, Reps: 1},
			why: "10.0% better",
		},
		{
			name: "too few nights", history: hist12, tonight: []float64{50}, cfg: Config{HigherIsBetter: true},
			want: Decision{Status: StatusInsufficientHistory, Tonight: 50, Nights: 12, Used: 12, Reps: 1},
			why:  "insufficient history: 12 usable past nights (12 given, 0 set aside as outliers), 20 needed",
		},
		{
			// The 50 is 69 robust SDs out and set aside, so the baseline
			// and noise are those of the other twelve; but 11 usable of
			// min 12 is too few.
			name: "outlier set aside leaves too few", history: with(hist12[:11], 50), tonight: []float64{100},
			cfg:  Config{HigherIsBetter: true, MinHistory: 12},
			want: Decision{Status: StatusInsufficientHistory, Tonight: 100, Nights: 12, Used: 11, Outliers: 1, Reps: 1},
			why:  "11 usable past nights (12 given, 1 set aside as outliers), 12 needed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Detect(tt.history, tt.tonight, tt.cfg)
			if err != nil {
				t.Fatalf("Detect() error = %v", err)
			}
			if !strings.Contains(got.Why, tt.why) {
				t.Errorf("Detect().Why = %q, want it to contain %q", got.Why, tt.why)
			}
			if diff := cmp.Diff(got, tt.want, cmpopts.EquateApprox(1e-6, 1e-9), cmpopts.IgnoreFields(Decision{}, "Why")); diff != "" {
				t.Errorf("Detect() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestDetectOutlierNightAlarmsOnce(t *testing.T) {
	t.Parallel()
	cfg := Config{HigherIsBetter: true, MinHistory: 10}
	d, err := Detect(hist12, []float64{70}, cfg)
	if err != nil || !d.Flagged {
		t.Fatalf("Detect(outlier night) = %+v, %v; want flagged", d, err)
	}
	// The next nights are normal, or a little worse (1.5 %, more than one
	// standard deviation), whether or not the caller keeps the outlier
	// night (a failed job) in the history: neither may flag.
	for _, hist := range [][]float64{hist12, with(hist12, 70)} {
		for _, tonight := range []float64{100, 98.5} {
			d, err := Detect(hist, []float64{tonight}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if d.Flagged {
				t.Errorf("Detect(%v, %v) flagged (%s); the outlier night must alarm only once", hist, tonight, d.Why)
			}
		}
	}
}

func TestDetectTwoNights(t *testing.T) {
	t.Parallel()
	cfg := Config{HigherIsBetter: true, MinHistory: 10}
	// 2.7 % down is more than one standard deviation but within the
	// single-night threshold of 3.32 %.
	first, err := Detect(hist12, []float64{97.3}, cfg)
	if err != nil || first.Flagged {
		t.Fatalf("Detect(night k) = %+v, %v; want not flagged", first, err)
	}
	// Night k+1: the pair averages a log drop of 0.02737 against the
	// two-night threshold 3.105807·s·√(1/2 + 1/12) = 0.02478.
	second, err := Detect(with(hist12, 97.3), []float64{97.3}, cfg)
	if err != nil || !second.Flagged || second.Rule != RuleTwoNight {
		t.Fatalf("Detect(night k+1) = %+v, %v; want flagged by the two-night rule", second, err)
	}
	if !strings.Contains(second.Why, "the two nights average 2.7% worse, beyond the 2.4% two nights allow") {
		t.Errorf("Detect(night k+1).Why = %q", second.Why)
	}
	cfg.SingleNightOnly = true
	if d, _ := Detect(with(hist12, 97.3), []float64{97.3}, cfg); d.Flagged {
		t.Errorf("Detect(night k+1, single night only) flagged: %s", d.Why)
	}
	// A better night before does not confirm.
	cfg.SingleNightOnly = false
	if d, _ := Detect(with(hist12, 101), []float64{97.3}, cfg); d.Flagged {
		t.Errorf("Detect(better night, then 97.3) flagged: %s", d.Why)
	}
}

func TestDetectRepetitions(t *testing.T) {
	t.Parallel()
	cfg := Config{HigherIsBetter: true, MinHistory: 10}
	steady, err := Detect(hist12, []float64{92, 92, 92}, cfg)
	if err != nil || !steady.Flagged || math.Abs(steady.NoiseThresholdPct-thresh12P) > 1e-5 {
		t.Errorf("Detect(three agreeing reps at 92) = %+v, %v; want flagged at the night threshold %.3f%%", steady, err, thresh12P)
	}
	// About the same mean, but the repetitions disagree by ±13 %: their
	// standard error (0.13/√3 in log) exceeds the night-to-night noise and
	// widens the threshold past the drop.
	noisy, err := Detect(hist12, []float64{80, 92, 105}, cfg)
	if err != nil || noisy.Flagged {
		t.Errorf("Detect(disagreeing reps 80, 92, 105) = %+v, %v; want not flagged", noisy, err)
	}
	if !(noisy.NoiseThresholdPct > 3*thresh12P) {
		t.Errorf("Detect(disagreeing reps).NoiseThresholdPct = %.2f, want > %.2f", noisy.NoiseThresholdPct, 3*thresh12P)
	}
}

func TestDetectSlowDrift(t *testing.T) {
	t.Parallel()
	// 0.2 % worse every night for 30 nights: each night is within the noise
	// that the drift itself makes of the history, so Detect does not flag;
	// the change-point search over the series does see the drift.
	var series []float64
	for i := range 31 {
		series = append(series, 100*math.Exp(-0.002*float64(i)))
	}
	d, err := Detect(series[:30], series[30:], Config{HigherIsBetter: true})
	if err != nil || d.Flagged {
		t.Errorf("Detect(slow drift) = %+v, %v; want not flagged", d, err)
	}
	// A noiseless ramp is split again and again; the first, most
	// prominent split is in the middle (index 15 of 31).
	cs := ChangePoints(series, 0.01)
	var mid bool
	for _, c := range cs {
		mid = mid || c.Index == 15
	}
	if len(cs) < 2 || !mid {
		t.Errorf("ChangePoints(slow drift) = %+v; want several changes, one at 15", cs)
	}
}

func TestDetectErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		history, tonight []float64
		cfg              Config
		want             string
	}{
		{name: "no tonight", history: hist12, want: "no value for tonight"},
		{name: "zero night", history: with(hist12, 0), tonight: []float64{1}, want: "past night 13 is 0"},
		{name: "NaN rep", history: hist12, tonight: []float64{1, math.NaN()}, want: "tonight's repetition 2 is NaN"},
		{name: "bad rate", history: hist12, tonight: []float64{1}, cfg: Config{FalseAlarmRate: 0.7}, want: "false-alarm rate 0.7"},
		{name: "bad floor", history: hist12, tonight: []float64{1}, cfg: Config{MinEffectPct: -1}, want: "minimum effect -1%"},
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
