package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/detect"
	"github.com/benchkite/benchkite/runner/internal/summary"
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
	DefaultNights     = detect.CalibratedNights
	DefaultNoiseCV    = 0.02
	DefaultStepPct    = 6
	DefaultTrials     = 4000
	DefaultSeed       = 1
	DefaultNightShare = 0.5
	DefaultBuildFDR   = 0.05
)

const usage = `runner calibrate: measure the regression gate on simulated nights of the nightly loop

Usage:
  runner calibrate [flags]

Each trial runs one recipe-metric night after night as the pipeline does:
every night from the fifth is judged, a flagged night is re-run on alarm
(--rerun) and, if still flagged, fails and stays out of the history, which
keeps the last --nights passing nights. --noise-model, --noise-cv and
--step-pct take comma-separated lists; every combination is simulated.
Every flag is also read from BENCHKITE_CALIBRATE_<FLAG> (upper case, "-" as
"_"); a flag on the command line wins.

Flags:
`

// options are the parsed flags.
type options struct {
	nights, trials, reps, minHistory, judged, recipes, metrics        int
	seed                                                              uint64
	models                                                            []string
	noiseCV, stepPct                                                  []float64
	falseAlarm, minEffect, nightShare, missing, buildFDR, changeAlpha float64
	tDoF, outlierRate, outlierScale, phi                              float64
	singleNight, rerun, json                                          bool
	fromHistory, recipe, metric                                       string
}

// Command runs `runner calibrate` with args (without the command name),
// reading BENCHKITE_CALIBRATE_* through getenv.
func Command(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	o, err := parse(args, getenv, stderr)
	if err != nil {
		return err
	}
	var residuals []float64
	if o.fromHistory != "" {
		residuals, err = historyResiduals(o.fromHistory, o.recipe, o.metric)
		if err != nil {
			return fmt.Errorf("%w: --from-history: %w", ErrUsage, err)
		}
		_, sd := meanSDOf(residuals)
		o.models, o.noiseCV = []string{ModelHistory}, []float64{math.Sqrt(math.Expm1(sd * sd))}
	}
	cfg := detect.Config{FalseAlarmRate: o.falseAlarm, MinEffectPct: o.minEffect, MinHistory: o.minHistory, SingleNightOnly: o.singleNight, ChangeAlpha: o.changeAlpha}
	var results []Result
	for _, model := range o.models {
		for _, noise := range o.noiseCV {
			for _, step := range o.stepPct {
				if err := ctx.Err(); err != nil {
					return err
				}
				s := Sim{Model: model, NoiseCV: noise, StepPct: step, Nights: o.nights, Trials: o.trials, Seed: o.seed,
					Reps: o.reps, NightShare: o.nightShare, Rerun: o.rerun, Missing: o.missing, Judged: o.judged,
					TDoF: o.tDoF, OutlierRate: o.outlierRate, OutlierScale: o.outlierScale, Phi: o.phi,
					Recipes: o.recipes, Metrics: o.metrics, BuildFDR: o.buildFDR, Residuals: residuals, Detector: cfg}
				if err := s.check(); err != nil {
					return fmt.Errorf("%w: %w", ErrUsage, err)
				}
				r, err := Run(s)
				if err != nil {
					return fmt.Errorf("%w: %w", ErrUsage, err)
				}
				results = append(results, r)
			}
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
		nights: DefaultNights, trials: DefaultTrials, reps: 1, minHistory: detect.DefaultMinHistory, judged: 10,
		seed: DefaultSeed, models: []string{ModelLognormal}, noiseCV: []float64{DefaultNoiseCV}, stepPct: []float64{DefaultStepPct},
		falseAlarm: detect.DefaultFalseAlarmRate, nightShare: DefaultNightShare, rerun: true, buildFDR: DefaultBuildFDR,
		tDoF: 3, outlierRate: 0.05, outlierScale: 3, phi: 0.5, metrics: 3,
	}
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	fs.IntVar(&o.nights, "nights", o.nights, "past passing nights the gate asks for")
	fs.Var((*stringList)(&o.models), "noise-model", "noise of a run: "+strings.Join(Models, ", ")+" (list)")
	fs.Var((*floatList)(&o.noiseCV), "noise-cv", "coefficient of variation of one run, a fraction (list)")
	fs.Var((*floatList)(&o.stepPct), "step-pct", "worsening that starts on night k, percent (list)")
	fs.IntVar(&o.trials, "trials", o.trials, "trials per setting")
	fs.Uint64Var(&o.seed, "seed", o.seed, "random seed")
	fs.BoolVar(&o.json, "json", false, "print one JSON object per setting")
	fs.Float64Var(&o.falseAlarm, "false-alarm-rate", o.falseAlarm, "detector: one-sided false-alarm rate per night")
	fs.Float64Var(&o.minEffect, "min-effect-pct", 0, "detector: the floor, smallest worsening ever flagged, percent (a recipe's max_drop_pct)")
	fs.IntVar(&o.minHistory, "min-history", o.minHistory, "detector: fewest past nights to judge by (young recipes)")
	fs.Float64Var(&o.changeAlpha, "change-alpha", detect.DefaultChangeAlpha, "detector: significance of a change point")
	fs.BoolVar(&o.singleNight, "single-night", false, "detector: turn the two-night rule off")
	fs.IntVar(&o.reps, "reps", o.reps, "bench repetitions per night")
	fs.Float64Var(&o.nightShare, "night-share", o.nightShare, "part of the variance all runs of a night share (re-runs do not draw it anew)")
	fs.BoolVar(&o.rerun, "rerun", o.rerun, "re-run a flagged night with fewer than 3 repetitions twice more before deciding")
	fs.Float64Var(&o.missing, "missing", 0, "chance a night has no run")
	fs.IntVar(&o.judged, "judged", o.judged, "nights judged per trial once the history is full")
	fs.Float64Var(&o.tDoF, "t-dof", o.tDoF, "student-t: degrees of freedom (an integer above 2)")
	fs.Float64Var(&o.outlierRate, "outlier-rate", o.outlierRate, "outliers: chance a run is an outlier")
	fs.Float64Var(&o.outlierScale, "outlier-scale", o.outlierScale, "outliers: an outlier's spread, in times the others'")
	fs.Float64Var(&o.phi, "phi", o.phi, "ar1: night-to-night autocorrelation")
	fs.IntVar(&o.recipes, "recipes", 0, "recipes of a build for the build false-alarm rate (0: not measured)")
	fs.IntVar(&o.metrics, "metrics", o.metrics, "gated metrics per recipe for the build false-alarm rate")
	fs.Float64Var(&o.buildFDR, "build-fdr", o.buildFDR, "a build's false-alarm budget (Benjamini–Hochberg level)")
	fs.StringVar(&o.fromHistory, "from-history", "", "a history file (results/_history/baselines.json): resample --recipe's --metric nights as the noise")
	fs.StringVar(&o.recipe, "recipe", "", "with --from-history: the recipe")
	fs.StringVar(&o.metric, "metric", "output_throughput", "with --from-history: the bench metric (of the recipe's first bench run that has it)")
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
	if o.judged < 1 {
		bad = append(bad, fmt.Sprintf("--judged %d is below 1", o.judged))
	}
	checkFrac := func(name string, v float64) {
		if !(v >= 0 && v < 1) {
			bad = append(bad, fmt.Sprintf("%s %g is not in [0, 1)", name, v))
		}
	}
	checkFrac("--night-share", o.nightShare)
	checkFrac("--missing", o.missing)
	checkFrac("--outlier-rate", o.outlierRate)
	checkFrac("--phi", o.phi)
	if !(o.tDoF > 2) || o.tDoF != math.Trunc(o.tDoF) || o.tDoF > 100 {
		bad = append(bad, fmt.Sprintf("--t-dof %g is not an integer in (2, 100]", o.tDoF))
	}
	if !(o.outlierScale >= 1) {
		bad = append(bad, fmt.Sprintf("--outlier-scale %g is below 1", o.outlierScale))
	}
	if o.recipes < 0 || o.metrics < 1 || o.recipes*o.metrics > 1000 {
		bad = append(bad, fmt.Sprintf("--recipes %d × --metrics %d is not in [0, 1000] tests", o.recipes, o.metrics))
	}
	if !(o.buildFDR > 0 && o.buildFDR < 1) {
		bad = append(bad, fmt.Sprintf("--build-fdr %g is not in (0, 1)", o.buildFDR))
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
	for _, m := range o.models {
		if !slices.Contains(Models, m) {
			bad = append(bad, fmt.Sprintf("--noise-model %q is not one of %s", m, strings.Join(Models, ", ")))
		}
	}
	if (o.fromHistory == "") != (o.recipe == "") {
		bad = append(bad, "--from-history and --recipe go together")
	}
	if len(bad) > 0 {
		return o, fmt.Errorf("%w: %s", ErrUsage, strings.Join(bad, "; "))
	}
	return o, nil
}

// historyResiduals reads recipe's nights of metric from a history file
// and returns their log values around their median, oldest first.
func historyResiduals(path, recipe, metric string) ([]float64, error) {
	f, err := baseline.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rec, ok := f.Recipes[recipe]
	if !ok {
		names := make([]string, 0, len(f.Recipes))
		for n := range f.Recipes {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("%s has no recipe %q (it has %s)", path, recipe, strings.Join(names, ", "))
	}
	var logs []float64
	run := ""
	for i := len(rec.Nights) - 1; i >= 0; i-- {
		s, err := summary.Read(bytes.NewReader(rec.Nights[i].Summary))
		if err != nil {
			continue
		}
		for _, b := range s.Bench {
			if v, ok := b.Metrics[metric]; ok && b.Status == summary.StatusOK && v > 0 && !math.IsInf(v, 1) && (run == "" || run == b.Name) {
				run = b.Name
				logs = append(logs, math.Log(v))
				break
			}
		}
	}
	if len(logs) < detect.DefaultMinHistory {
		return nil, fmt.Errorf("%s: %s has %d nights with %s, %d needed", path, recipe, len(logs), metric, detect.DefaultMinHistory)
	}
	s := slices.Clone(logs)
	slices.Sort(s)
	med := s[len(s)/2]
	for i := range logs {
		logs[i] -= med
	}
	return logs, nil
}

func meanSDOf(x []float64) (float64, float64) {
	var sum float64
	for _, v := range x {
		sum += v
	}
	m := sum / float64(len(x))
	var ss float64
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return m, math.Sqrt(ss / float64(max(1, len(x)-1)))
}

func writeText(w io.Writer, o options, results []Result) error {
	rule := "two-night rule on"
	if o.singleNight {
		rule = "single night only"
	}
	rerun := "re-run on alarm"
	if !o.rerun {
		rerun = "no re-run"
	}
	fmt.Fprintf(w, "%d past nights, %d trials per setting, seed %d, %d repetition(s) a night, %s, night share %g, missing %g%%\n",
		o.nights, o.trials, o.seed, o.reps, rerun, o.nightShare, o.missing*100)
	fmt.Fprintf(w, "detector: false-alarm rate %g%%, floor %g%%, min history %d, %s\n", o.falseAlarm*100, o.minEffect, o.minHistory, rule)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "noise model\tnoise CV\tstep\tfalse alarms/night\tyoung (5-14 nights)\tpower (2 nights)\tfirst night\tculprit coverage\tre-runs/night")
	if o.recipes > 0 {
		fmt.Fprintf(tw, "\tbuild false alarms (%d×%d)", o.recipes, o.metrics)
	}
	fmt.Fprintln(tw)
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%g%%\t%g%%\t%.2f%%\t%.2f%%\t%.1f%%\t%.1f%%\t%.1f%%\t%.3f", r.Model, r.NoiseCV*100, r.StepPct,
			r.FalsePositiveRate*100, r.YoungFalsePositiveRate*100, r.Power*100, r.PowerFirstNight*100, r.CulpritCoverage*100, r.RerunsPerNight)
		if o.recipes > 0 {
			fmt.Fprintf(tw, "\t%.2f%%", r.BuildFalseAlarmRate*100)
		}
		fmt.Fprintln(tw)
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

// stringList is a comma-separated list of words.
type stringList []string

func (l *stringList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *stringList) Set(s string) error {
	var out []string
	for _, p := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(p))
	}
	*l = out
	return nil
}
