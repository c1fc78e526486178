package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
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

const usage = `runner calibrate: measure the regression detector on simulated nights

Usage:
  runner calibrate [flags]

--noise-cv and --step-pct take comma-separated lists; every pair is
simulated. Every flag is also read from BENCHKITE_CALIBRATE_<FLAG> (upper
case, "-" as "_"); a flag on the command line wins.

Flags:
`

// options are the parsed flags.
type options struct {
	nights, trials, reps, minHistory int
	seed                             uint64
	noiseCV, stepPct                 []float64
	repCV, falseAlarm, minEffect     float64
	singleNight, json                bool
}

// Command runs `runner calibrate` with args (without the command name),
// reading BENCHKITE_CALIBRATE_* through getenv.
func Command(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	cfg := detect.Config{FalseAlarmRate: o.falseAlarm, MinEffectPct: o.minEffect, MinHistory: o.minHistory, SingleNightOnly: o.singleNight}
	var results []Result
	for _, noise := range o.noiseCV {
		for _, step := range o.stepPct {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := Run(Sim{Nights: o.nights, NoiseCV: noise, StepPct: step, Trials: o.trials, Seed: o.seed,
				Reps: o.reps, RepCV: o.repCV, Detector: cfg})
			if err != nil {
				return fmt.Errorf("%w: %w", ErrUsage, err)
			}
			results = append(results, r)
		}
	}
	if o.json {
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

func parse(args []string, getenv func(string) string, stderr io.Writer) (options, error) {
	o := options{
		nights: DefaultNights, trials: DefaultTrials, reps: 1, minHistory: detect.DefaultMinHistory,
		seed: DefaultSeed, noiseCV: []float64{DefaultNoiseCV}, stepPct: []float64{DefaultStepPct},
		falseAlarm: detect.DefaultFalseAlarmRate,
	}
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	fs.IntVar(&o.nights, "nights", o.nights, "past nights the detector sees")
	fs.Var((*floatList)(&o.noiseCV), "noise-cv", "night-to-night coefficient of variation, a fraction (list)")
	fs.Var((*floatList)(&o.stepPct), "step-pct", "worsening that starts on night k, percent (list)")
	fs.IntVar(&o.trials, "trials", o.trials, "trials per setting")
	fs.Uint64Var(&o.seed, "seed", o.seed, "random seed")
	fs.BoolVar(&o.json, "json", false, "print one JSON object per setting")
	fs.Float64Var(&o.falseAlarm, "false-alarm-rate", o.falseAlarm, "detector: one-sided false-alarm rate per night")
	fs.Float64Var(&o.minEffect, "min-effect-pct", 0, "detector: smallest worsening ever flagged, percent (a recipe's max_drop_pct)")
	fs.IntVar(&o.minHistory, "min-history", o.minHistory, "detector: fewest usable past nights to judge by")
	fs.BoolVar(&o.singleNight, "single-night", false, "detector: turn the two-night rule off")
	fs.IntVar(&o.reps, "reps", o.reps, "bench repetitions per night")
	fs.Float64Var(&o.repCV, "rep-cv", 0, "coefficient of variation between repetitions of one night, a fraction")

	var envErrs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := EnvPrefix + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		f.Usage += " (env " + name + ")"
		if v := getenv(name); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				envErrs = append(envErrs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
		}
	})
	if err := errors.Join(envErrs...); err != nil {
		return o, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	var bad []string
	if o.nights < o.minHistory {
		bad = append(bad, fmt.Sprintf("--nights %d is below --min-history %d: every night would lack history", o.nights, o.minHistory))
	}
	if o.trials < 1 || o.trials > 10_000_000 {
		bad = append(bad, fmt.Sprintf("--trials %d is not in [1, 10000000]", o.trials))
	}
	if o.reps < 1 {
		bad = append(bad, fmt.Sprintf("--reps %d is below 1", o.reps))
	}
	if !(o.repCV >= 0 && o.repCV < 1) {
		bad = append(bad, fmt.Sprintf("--rep-cv %g is not in [0, 1)", o.repCV))
	}
	for _, c := range o.noiseCV {
		if !(c > 0 && c < 1) {
			bad = append(bad, fmt.Sprintf("--noise-cv %g is not in (0, 1): give a fraction, e.g. 0.02 for 2%%", c))
		}
	}
	for _, s := range o.stepPct {
		if !(s >= 0 && s < 100) {
			bad = append(bad, fmt.Sprintf("--step-pct %g is not in [0, 100)", s))
		}
	}
	if len(bad) > 0 {
		return o, fmt.Errorf("%w: %s", ErrUsage, strings.Join(bad, "; "))
	}
	return o, nil
}

func writeText(w io.Writer, o options, results []Result) error {
	rule := "two-night rule on"
	if o.singleNight {
		rule = "single night only"
	}
	reps := ""
	if o.reps > 1 {
		reps = fmt.Sprintf(", %d repetitions a night at CV %g%%", o.reps, o.repCV*100)
	}
	fmt.Fprintf(w, "%d past nights, %d trials per setting, seed %d%s\n", o.nights, o.trials, o.seed, reps)
	fmt.Fprintf(w, "detector: false-alarm rate %g%%, floor %g%%, min history %d, %s\n", o.falseAlarm*100, o.minEffect, o.minHistory, rule)
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
	for _, s := range o.stepPct {
		fmt.Fprintf(tw, "\tstep %g%%", s)
	}
	fmt.Fprintln(tw)
	for i, noise := range o.noiseCV {
		row := results[i*len(o.stepPct) : (i+1)*len(o.stepPct)]
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

// floatList is a comma-separated list of numbers; setting it replaces the
// default.
type floatList []float64

func (l *floatList) String() string {
	if l == nil {
		return ""
	}
	parts := make([]string, len(*l))
	for i, v := range *l {
		parts[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(parts, ",")
}

func (l *floatList) Set(s string) error {
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
