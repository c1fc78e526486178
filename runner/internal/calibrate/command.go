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

// Config is what one calibration simulates; runner's CLI fills it from
// flags (Flags) and BENCHKITE_CALIBRATE_* variables.
type Config struct {
	Nights, Trials, Reps, MinHistory, Judged, Recipes, Metrics int
	Seed                                                       uint64
	Models                                                     StringList
	NoiseCV, StepPct                                           FloatList
	FalseAlarm, MinEffect, NightShare, Missing, BuildFDR       float64
	ChangeAlpha, TDoF, OutlierRate, OutlierScale, Phi          float64
	SingleNight, NoRerun, JSON                                 bool
	FromHistory, Recipe, Metric                                string
	// Series is a file of real histories to replay instead (--series);
	// Shuffle replays each shuffled once, Check measures the targets.
	Series         string
	Shuffle, Check bool
}

// Defaults is the configuration the README's numbers come from.
func Defaults() Config {
	return Config{
		Nights: DefaultNights, Trials: DefaultTrials, Reps: 1, MinHistory: detect.DefaultMinHistory, Judged: 10,
		Seed: DefaultSeed, Models: StringList{ModelLognormal}, NoiseCV: FloatList{DefaultNoiseCV}, StepPct: FloatList{DefaultStepPct},
		FalseAlarm: detect.DefaultFalseAlarmRate, NightShare: DefaultNightShare, BuildFDR: DefaultBuildFDR,
		ChangeAlpha: detect.DefaultChangeAlpha, TDoF: 3, OutlierRate: 0.05, OutlierScale: 3, Phi: 0.5, Metrics: 3,
		Metric: "output_throughput",
	}
}

// Flags binds c's fields to flags of fs, with c's values as defaults.
func (c *Config) Flags(fs *flag.FlagSet) {
	fs.IntVar(&c.Nights, "nights", c.Nights, "past nights the gate asks for")
	fs.Var(&c.Models, "noise-model", "noise of a run: "+strings.Join(Models, ", ")+" (comma-separated list)")
	fs.Var(&c.NoiseCV, "noise-cv", "coefficient of variation of one run, a fraction (comma-separated list)")
	fs.Var(&c.StepPct, "step-pct", "worsening that starts on night k, percent (comma-separated list)")
	fs.IntVar(&c.Trials, "trials", c.Trials, "trials per setting")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "random seed")
	fs.BoolVar(&c.JSON, "json", c.JSON, "print one JSON object per setting")
	fs.Float64Var(&c.FalseAlarm, "false-alarm-rate", c.FalseAlarm, "detector: one-sided false-alarm rate per night")
	fs.Float64Var(&c.MinEffect, "min-effect-pct", c.MinEffect, "detector: the floor, smallest worsening ever flagged, percent (a recipe's max_drop_pct)")
	fs.IntVar(&c.MinHistory, "min-history", c.MinHistory, "detector: fewest past nights to judge by (young recipes)")
	fs.Float64Var(&c.ChangeAlpha, "change-alpha", c.ChangeAlpha, "detector: significance of a change point")
	fs.BoolVar(&c.SingleNight, "single-night", c.SingleNight, "detector: turn the two-night rule off")
	fs.IntVar(&c.Reps, "reps", c.Reps, "bench repetitions per night")
	fs.Float64Var(&c.NightShare, "night-share", c.NightShare, "part of the variance all runs of a night share (re-runs do not draw it anew)")
	fs.BoolVar(&c.NoRerun, "no-rerun", c.NoRerun, "do not re-run a night that raises the alarm with fewer than 3 repetitions before deciding")
	fs.Float64Var(&c.Missing, "missing", c.Missing, "chance a night has no run")
	fs.IntVar(&c.Judged, "judged", c.Judged, "nights judged per trial once the history is full")
	fs.Float64Var(&c.TDoF, "t-dof", c.TDoF, "student-t: degrees of freedom (an integer above 2)")
	fs.Float64Var(&c.OutlierRate, "outlier-rate", c.OutlierRate, "outliers: chance a run is an outlier")
	fs.Float64Var(&c.OutlierScale, "outlier-scale", c.OutlierScale, "outliers: an outlier's spread, in times the others'")
	fs.Float64Var(&c.Phi, "phi", c.Phi, "ar1: night-to-night autocorrelation")
	fs.IntVar(&c.Recipes, "recipes", c.Recipes, "recipes of a build for the build false-alarm rate (0: not measured)")
	fs.IntVar(&c.Metrics, "metrics", c.Metrics, "gated metrics per recipe for the build false-alarm rate")
	fs.Float64Var(&c.BuildFDR, "build-fdr", c.BuildFDR, "a build's false-alarm budget (Benjamini–Hochberg level)")
	fs.StringVar(&c.FromHistory, "from-history", c.FromHistory, "a history file (results/_history/baselines.json): resample --recipe's --metric nights as the noise")
	fs.StringVar(&c.Recipe, "recipe", c.Recipe, "with --from-history: the recipe")
	fs.StringVar(&c.Metric, "metric", c.Metric, "with --from-history: the bench metric (of the recipe's first bench run that has it)")
	fs.StringVar(&c.Series, "series", c.Series, "a JSON file of real series ([{name, higher_is_better, values, known, reruns}]): replay each night by night through the gate, one JSON object a night with --json, a summary on stderr")
	fs.BoolVar(&c.Shuffle, "shuffle", c.Shuffle, "with --series: replay each series shuffled once (seed --seed), known changes dropped: its real noise without its level shifts")
	fs.BoolVar(&c.Check, "check", c.Check, "with --series: measure the targets on real histories: false alarms on each series shuffled, power against 3σ steps injected into it, nights red after the catch; exit 1 when one is missed")
}

// Measure simulates every (model, noise, step) combination of c and
// writes what it measured, as text or one JSON object per combination;
// with --series it replays real histories instead.
func Measure(ctx context.Context, o Config, stdout, stderr io.Writer) error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.Series != "" {
		return measureSeries(ctx, o, stdout, stderr)
	}
	var residuals []float64
	if o.FromHistory != "" {
		var err error
		residuals, err = historyResiduals(o.FromHistory, o.Recipe, o.Metric)
		if err != nil {
			return fmt.Errorf("%w: --from-history: %w", ErrUsage, err)
		}
		_, sd := meanSDOf(residuals)
		o.Models, o.NoiseCV = StringList{ModelHistory}, FloatList{math.Sqrt(math.Expm1(sd * sd))}
	}
	cfg := detect.Config{FalseAlarmRate: o.FalseAlarm, MinEffectPct: o.MinEffect, MinHistory: o.MinHistory, SingleNightOnly: o.SingleNight, ChangeAlpha: o.ChangeAlpha}
	var results []Result
	for _, model := range o.Models {
		for _, noise := range o.NoiseCV {
			for _, step := range o.StepPct {
				if err := ctx.Err(); err != nil {
					return err
				}
				s := Sim{Model: model, NoiseCV: noise, StepPct: step, Nights: o.Nights, Trials: o.Trials, Seed: o.Seed,
					Reps: o.Reps, NightShare: o.NightShare, Rerun: !o.NoRerun, Missing: o.Missing, Judged: o.Judged,
					TDoF: o.TDoF, OutlierRate: o.OutlierRate, OutlierScale: o.OutlierScale, Phi: o.Phi,
					Recipes: o.Recipes, Metrics: o.Metrics, BuildFDR: o.BuildFDR, Residuals: residuals, Detector: cfg}
				r, err := Run(s)
				if err != nil {
					return fmt.Errorf("%w: %w", ErrUsage, err)
				}
				results = append(results, r)
			}
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

// Validate names every impossible value of c, as a usage error.
func (o Config) Validate() error {
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
	if o.Judged < 1 {
		bad = append(bad, fmt.Sprintf("--judged %d is below 1", o.Judged))
	}
	checkFrac := func(name string, v float64) {
		if !(v >= 0 && v < 1) {
			bad = append(bad, fmt.Sprintf("%s %g is not in [0, 1)", name, v))
		}
	}
	checkFrac("--night-share", o.NightShare)
	checkFrac("--missing", o.Missing)
	checkFrac("--outlier-rate", o.OutlierRate)
	checkFrac("--phi", o.Phi)
	if !(o.TDoF > 2) || o.TDoF != math.Trunc(o.TDoF) || o.TDoF > 100 {
		bad = append(bad, fmt.Sprintf("--t-dof %g is not an integer in (2, 100]", o.TDoF))
	}
	if !(o.OutlierScale >= 1) {
		bad = append(bad, fmt.Sprintf("--outlier-scale %g is below 1", o.OutlierScale))
	}
	if o.Recipes < 0 || o.Metrics < 1 || o.Recipes*o.Metrics > 1000 {
		bad = append(bad, fmt.Sprintf("--recipes %d × --metrics %d is not in [0, 1000] tests", o.Recipes, o.Metrics))
	}
	if !(o.BuildFDR > 0 && o.BuildFDR < 1) {
		bad = append(bad, fmt.Sprintf("--build-fdr %g is not in (0, 1)", o.BuildFDR))
	}
	if !(o.ChangeAlpha > 0 && o.ChangeAlpha < 1) {
		bad = append(bad, fmt.Sprintf("--change-alpha %g is not in (0, 1)", o.ChangeAlpha))
	}
	if !(o.FalseAlarm > 0 && o.FalseAlarm < 0.5) {
		bad = append(bad, fmt.Sprintf("--false-alarm-rate %g is not in (0, 0.5)", o.FalseAlarm))
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
	for _, m := range o.Models {
		if !slices.Contains(Models, m) {
			bad = append(bad, fmt.Sprintf("--noise-model %q is not one of %s", m, strings.Join(Models, ", ")))
		}
	}
	if (o.FromHistory == "") != (o.Recipe == "") {
		bad = append(bad, "--from-history and --recipe go together")
	}
	if o.Series == "" && (o.Shuffle || o.Check) {
		bad = append(bad, "--shuffle and --check need --series")
	}
	if o.Series != "" && o.FromHistory != "" {
		bad = append(bad, "--series and --from-history are two sources of nights: give one")
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: %s", ErrUsage, strings.Join(bad, "; "))
	}
	return nil
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

func writeText(w io.Writer, o Config, results []Result) error {
	rule := "two-night rule on"
	if o.SingleNight {
		rule = "single night only"
	}
	rerun := "re-run on alarm"
	if o.NoRerun {
		rerun = "no re-run"
	}
	fmt.Fprintf(w, "%d past nights, %d trials per setting, seed %d, %d repetition(s) a night, %s, night share %g, missing %g%%\n",
		o.Nights, o.Trials, o.Seed, o.Reps, rerun, o.NightShare, o.Missing*100)
	fmt.Fprintf(w, "detector: false-alarm rate %g%%, floor %g%%, min history %d, %s\n", o.FalseAlarm*100, o.MinEffect, o.MinHistory, rule)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "noise model\tnoise CV\tstep\tfalse alarms/night\tyoung (5-14 nights)\tpower (2 nights)\tfirst night\tculprit coverage\tstays red\taccepted, false alarms\tre-runs/night")
	if o.Recipes > 0 {
		fmt.Fprintf(tw, "\tbuild false alarms (%d×%d)", o.Recipes, o.Metrics)
	}
	fmt.Fprintln(tw)
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%g%%\t%g%%\t%.2f%%\t%.2f%%\t%.1f%%\t%.1f%%\t%.1f%%\t%.1f%%\t%.2f%%\t%.3f", r.Model, r.NoiseCV*100, r.StepPct,
			r.FalsePositiveRate*100, r.YoungFalsePositiveRate*100, r.Power*100, r.PowerFirstNight*100, r.CulpritCoverage*100, r.StaysRed*100, r.AcceptedFalsePositiveRate*100, r.RerunsPerNight)
		if o.Recipes > 0 {
			fmt.Fprintf(tw, "\t%.2f%%", r.BuildFalseAlarmRate*100)
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// FloatList is a comma-separated list of numbers; setting it replaces the
// default.
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

// StringList is a comma-separated list of words.
type StringList []string

func (l *StringList) String() string {
	if l == nil {
		return ""
	}
	return strings.Join(*l, ",")
}

func (l *StringList) Set(s string) error {
	var out []string
	for _, p := range strings.Split(s, ",") {
		out = append(out, strings.TrimSpace(p))
	}
	*l = out
	return nil
}
