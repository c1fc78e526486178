package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/benchkite/benchkite/runner/internal/detect"
)

// ErrUsage marks a command line or environment that does not parse or
// names impossible values.
var ErrUsage = errors.New("usage")

// EnvPrefix starts the environment variable of every flag: --noise-cv is
// also read from BENCHKITE_CALIBRATE_NOISE_CV.
const EnvPrefix = "BENCHKITE_CALIBRATE_"

// Defaults of the command. The power target is for a step of three times
// the noise.
const (
	DefaultNights  = 30
	DefaultNoiseCV = 0.02
	DefaultStepPct = 6
	DefaultTrials  = 20000
	DefaultSeed    = 1
)

// Config is what one calibration simulates; runner's CLI fills it from
// flags and BENCHKITE_CALIBRATE_* variables.
type Config struct {
	Nights, Trials, Reps, MinHistory int
	Seed                             uint64
	NoiseCV, StepPct                 FloatList
	RepCV, FalseAlarm, MinEffect     float64
	SingleNight, JSON                bool
}

// Defaults is the configuration the README's numbers come from.
func Defaults() Config {
	return Config{
		Nights: DefaultNights, Trials: DefaultTrials, Reps: 1, MinHistory: detect.DefaultMinHistory,
		Seed: DefaultSeed, NoiseCV: FloatList{DefaultNoiseCV}, StepPct: FloatList{DefaultStepPct},
		FalseAlarm: detect.DefaultFalseAlarmRate,
	}
}

// Measure simulates every (noise, step) pair of c and writes the false
// alarms and power, as text or one JSON object per pair.
func Measure(ctx context.Context, o Config, stdout io.Writer) error {
	if err := o.Check(); err != nil {
		return err
	}
	cfg := detect.Config{FalseAlarmRate: o.FalseAlarm, MinEffectPct: o.MinEffect, MinHistory: o.MinHistory, SingleNightOnly: o.SingleNight}
	var results []Result
	for _, noise := range o.NoiseCV {
		for _, step := range o.StepPct {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := Run(Sim{Nights: o.Nights, NoiseCV: noise, StepPct: step, Trials: o.Trials, Seed: o.Seed,
				Reps: o.Reps, RepCV: o.RepCV, Detector: cfg})
			if err != nil {
				return fmt.Errorf("%w: %w", ErrUsage, err)
			}
			results = append(results, r)
		}
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		for _, r := range results {
			if err := enc.Encode(r); err != nil {
				return fmt.Errorf("write results: %w", err)
			}
		}
		return nil
	}
	return writeText(stdout, o, results)
}

// Check names every impossible value of c, as a usage error.
func (o Config) Check() error {
	var bad []string
	if o.Nights < o.MinHistory {
		bad = append(bad, fmt.Sprintf("--nights %d is below --min-history %d: every night would lack history", o.Nights, o.MinHistory))
	}
	if o.Trials < 1 || o.Trials > 10_000_000 {
		bad = append(bad, fmt.Sprintf("--trials %d is not in [1, 10000000]", o.Trials))
	}
	if o.Reps < 1 {
		bad = append(bad, fmt.Sprintf("--reps %d is below 1", o.Reps))
	}
	if !(o.RepCV >= 0 && o.RepCV < 1) {
		bad = append(bad, fmt.Sprintf("--rep-cv %g is not in [0, 1)", o.RepCV))
	}
	for _, c := range o.NoiseCV {
		if !(c > 0 && c < 1) {
			bad = append(bad, fmt.Sprintf("--noise-cv %g is not in (0, 1): give a fraction, e.g. 0.02 for 2%%", c))
		}
	}
	for _, s := range o.StepPct {
		if !(s >= 0 && s < 100) {
			bad = append(bad, fmt.Sprintf("--step-pct %g is not in [0, 100)", s))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrUsage, strings.Join(bad, "; "))
	}
	return nil
}

func writeText(w io.Writer, o Config, results []Result) error {
	rule := "two-night rule on"
	if o.SingleNight {
		rule = "single night only"
	}
	reps := ""
	if o.Reps > 1 {
		reps = fmt.Sprintf(", %d repetitions a night at CV %g%%", o.Reps, o.RepCV*100)
	}
	fmt.Fprintf(w, "%d past nights, %d trials per setting, seed %d%s\n", o.Nights, o.Trials, o.Seed, reps)
	fmt.Fprintf(w, "detector: false-alarm rate %g%%, floor %g%%, min history %d, %s\n", o.FalseAlarm*100, o.MinEffect, o.MinHistory, rule)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(results) == 1 {
		r := results[0]
		fmt.Fprintf(tw, "noise CV\t%g%%\n", r.NoiseCV*100)
		fmt.Fprintf(tw, "step\t%g%%\n", r.StepPct)
		fmt.Fprintf(tw, "false positives per no-change night\t%.2f%% (%d of %d)\n", r.FalsePositiveRate*100, r.FalsePositives, r.NoChangeNights)
		fmt.Fprintf(tw, "power (flagged on night k or k+1)\t%.2f%% (%d of %d; %d on night k)\n", r.Power*100, r.Detected, r.Trials, r.DetectedAtK)
		if r.Insufficient > 0 {
			fmt.Fprintf(tw, "insufficient-history verdicts\t%d\n", r.Insufficient)
		}
		return tw.Flush()
	}
	fmt.Fprintln(w, "power = share of trials flagged on the night a step starts or the next")
	fmt.Fprint(tw, "noise CV\tfalse positives/night")
	for _, s := range o.StepPct {
		fmt.Fprintf(tw, "\tstep %g%%", s)
	}
	fmt.Fprintln(tw)
	for i, noise := range o.NoiseCV {
		row := results[i*len(o.StepPct) : (i+1)*len(o.StepPct)]
		fmt.Fprintf(tw, "%g%%\t%.2f%%", noise*100, row[0].FalsePositiveRate*100)
		for _, r := range row {
			fmt.Fprintf(tw, "\t%.1f%%", r.Power*100)
		}
		fmt.Fprintln(tw)
	}
	var insufficient int
	for _, r := range results {
		insufficient += r.Insufficient
	}
	if insufficient > 0 {
		fmt.Fprintf(tw, "insufficient-history verdicts: %d\n", insufficient)
	}
	return tw.Flush()
}

// FloatList is a comma-separated list of numbers, a flag.Value; setting
// it replaces the default.
type FloatList []float64

func (l *FloatList) String() string {
	if l == nil {
		return ""
	}
	parts := make([]string, len(*l))
	for i, v := range *l {
		parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

func (l *FloatList) Set(s string) error {
	var out []float64
	for _, p := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", p)
		}
		out = append(out, v)
	}
	*l = out
	return nil
}
