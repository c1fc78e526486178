package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"

	"github.com/google/go-cmp/cmp"
)

func noEnv(string) string { return "" }

// command is `runner calibrate` as the CLI runs it, flags bound by
// Config.Flags (the CLI also reads BENCHKITE_CALIBRATE_*, tested there).
func command(ctx context.Context, args []string, _ func(string) string, stdout, stderr io.Writer) error {
	c := Defaults()
	fs := flag.NewFlagSet("calibrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.Flags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", ErrUsage, fs.Arg(0))
	}
	return Measure(ctx, c, stdout, stderr)
}

func runJSON(t *testing.T, args []string, getenv func(string) string) []map[string]any {
	t.Helper()
	var out bytes.Buffer
	if err := command(context.Background(), append(args, "--json"), getenv, &out, io.Discard); err != nil {
		t.Fatalf("command(%q) error = %v", args, err)
	}
	var rows []map[string]any
	dec := json.NewDecoder(&out)
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("command(%q) printed bad JSON: %v", args, err)
		}
		rows = append(rows, m)
	}
	return rows
}

// TestDefaultsMeetTargets holds the defaults to the targets, in the loop
// the pipeline runs, with seed 1 and 2000 trials (the numbers of the
// README table): at most 1 % false alarms per recipe-metric-night for
// log-normal and outlier nights, and for young recipes under Student's t
// (3 degrees of freedom) and AR(1) 0.5 nights too, whose mature recipes
// miss it and are held to the bounds below; power of at least 90 %
// within two nights and 70 % on the first for a step of three times the
// noise; culprit ranges that hold the culprit 95 % of the time; at most
// 5 % of builds of 20 recipes × 3 metrics falsely red; and a regression
// stays red on at least 80 % of its later nights.
func TestDefaultsMeetTargets(t *testing.T) {
	t.Parallel()
	atMost := func(t *testing.T, key string, row map[string]any, limit float64) {
		t.Helper()
		if v := row[key].(float64); !(v <= limit) {
			t.Errorf("%v: %s = %v, want <= %v", row["noise_model"], key, v, limit)
		}
	}
	atLeast := func(t *testing.T, key string, row map[string]any, limit float64) {
		t.Helper()
		if v := row[key].(float64); !(v >= limit) {
			t.Errorf("%v: %s = %v, want >= %v", row["noise_model"], key, v, limit)
		}
	}
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		rows := runJSON(t, []string{"--trials", "2000"}, noEnv)
		if len(rows) != 1 {
			t.Fatalf("default run printed %d results, want 1", len(rows))
		}
		r := rows[0]
		if r["noise_model"] != ModelLognormal || r["noise_cv"].(float64)*300 != r["step_pct"].(float64) || r["seed"].(float64) != 1 {
			t.Errorf("defaults: model %v, step %v%%, noise %v, seed %v; want log-normal, a step of three times the noise, seed 1", r["noise_model"], r["step_pct"], r["noise_cv"], r["seed"])
		}
		atMost(t, "false_positive_rate", r, 0.01)
		atMost(t, "false_positive_rate_young", r, 0.01)
		atLeast(t, "power", r, 0.90)
		atLeast(t, "power_first_night", r, 0.70)
		atLeast(t, "culprit_coverage", r, 0.95)
		// Not a target: a regression that is neither fixed nor accepted
		// stays red on most of its later nights (two in three when the
		// history kept passing nights only).
		atLeast(t, "stays_red", r, 0.8)
	})
	heavy := func(t *testing.T) {
		t.Helper()
		if raceEnabled {
			t.Skip("a few minutes under the race detector: run `go test ./runner/internal/calibrate` without -race")
		}
	}
	t.Run("heavy tails and autocorrelation", func(t *testing.T) {
		t.Parallel()
		heavy(t)
		for _, r := range runJSON(t, []string{"--trials", "2000", "--noise-model", "student-t,outliers,ar1"}, noEnv) {
			// The target is 1 % throughout. Student's t and AR(1) nights
			// miss it, and the README says so: a false alarm among
			// wandering or heavy-tailed nights that its next nights seem
			// to confirm is held red until it looks fixed, the price of
			// holding real regressions red until they are fixed (over
			// seeds 1 to 5: Student's t 1.02–1.17 %, AR(1) 1.06–1.38 %;
			// 1.03 % and 1.17 % at seed 1). The bounds keep them from
			// growing.
			limits := map[any]float64{ModelStudentT: 0.011, ModelAR1: 0.0125}
			limit, ok := limits[r["noise_model"]]
			if !ok {
				limit = 0.01
			}
			atMost(t, "false_positive_rate", r, limit)
			atMost(t, "false_positive_rate_young", r, 0.01)
			atLeast(t, "culprit_coverage", r, 0.95)
		}
	})
	t.Run("build budget", func(t *testing.T) {
		t.Parallel()
		heavy(t)
		for _, r := range runJSON(t, []string{"--trials", "200", "--noise-model", "student-t,ar1", "--recipes", "20", "--metrics", "3"}, noEnv) {
			if r["builds"].(float64) != 200 {
				t.Errorf("%v: %v builds, want 200", r["noise_model"], r["builds"])
			}
			atMost(t, "build_false_alarm_rate", r, 0.05)
		}
	})
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	args := []string{"--trials", "100", "--judged", "3", "--noise-cv", "0.03", "--step-pct", "6,9"}
	a := runJSON(t, append(args, "--seed", "5"), noEnv)
	b := runJSON(t, append(args, "--seed", "5"), noEnv)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two runs with seed 5 differ (-first +second):\n%s", diff)
	}
	c := runJSON(t, append(args, "--seed", "6"), noEnv)
	if cmp.Equal(a, c) {
		t.Errorf("seeds 5 and 6 gave the same results %v", a)
	}
	// Each noise level shares one no-change stream across steps.
	if a[0]["false_positives"] != a[1]["false_positives"] {
		t.Errorf("false positives differ between steps of one noise level: %v, %v", a[0]["false_positives"], a[1]["false_positives"])
	}
}

func TestPowerGrowsWithStep(t *testing.T) {
	t.Parallel()
	rows := runJSON(t, []string{"--trials", "300", "--judged", "1", "--noise-cv", "0.02", "--step-pct", "0,2,6,20"}, noEnv)
	var power []float64
	for _, r := range rows {
		power = append(power, r["power"].(float64))
	}
	if !(power[0] < 0.05 && power[1] < power[2] && power[2] < power[3] && power[3] == 1) {
		t.Errorf("power at steps 0, 2, 6, 20%% = %v; want rising from near 0 to 1", power)
	}
	// A floor above the step stops every flag.
	rows = runJSON(t, []string{"--trials", "100", "--judged", "1", "--step-pct", "6", "--min-effect-pct", "12"}, noEnv)
	if p := rows[0]["power"].(float64); p != 0 {
		t.Errorf("power with a 12%% floor and a 6%% step = %v, want 0", p)
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := command(context.Background(), []string{"--trials", "20", "--judged", "2", "--noise-cv", "0.01,0.02", "--step-pct", "3,6"}, noEnv, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"30 past nights, 20 trials per setting, seed 1, 1 repetition(s) a night, re-run on alarm", "noise model  noise CV  step  false alarms/night", "\nlognormal    1%        3%", "\nlognormal    2%        6%"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("command() printed\n%s\nwant it to contain %q", out.String(), want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{name: "unknown flag", args: []string{"--nightz", "3"}, want: "flag provided but not defined: -nightz"},
		{name: "not a number", args: []string{"--step-pct", "3,x"}, want: `"x" is not a number`},
		{name: "percent as cv", args: []string{"--noise-cv", "2"}, want: "--noise-cv 2 is not in (0, 1)"},
		{name: "too few nights", args: []string{"--nights", "4"}, want: "--nights 4 is below --min-history 5"},
		{name: "unknown model", args: []string{"--noise-model", "gauss"}, want: `--noise-model "gauss" is not one of`},
		{name: "history without recipe", args: []string{"--from-history", "h.json"}, want: "--from-history and --recipe go together"},
		{name: "no trials", args: []string{"--trials", "0"}, want: "--trials 0"},
		{name: "argument", args: []string{"extra"}, want: `unexpected argument "extra"`},
		{name: "bad detector", args: []string{"--false-alarm-rate", "0.9"}, want: "--false-alarm-rate 0.9 is not in (0, 0.5)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := command(context.Background(), tt.args, func(k string) string { return tt.env[k] }, io.Discard, io.Discard)
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("command(%q) error = %v, want ErrUsage containing %q", tt.args, err, tt.want)
			}
		})
	}
	if err := command(context.Background(), []string{"-h"}, noEnv, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("command(-h) error = %v, want flag.ErrHelp", err)
	}
}

func TestCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := command(ctx, []string{"--trials", "10"}, noEnv, io.Discard, io.Discard); !errors.Is(err, context.Canceled) {
		t.Errorf("command(canceled) error = %v, want context.Canceled", err)
	}
}

// Every noise model runs, and --from-history resamples a recipe's nights
// from a history file.
func TestModelsAndHistory(t *testing.T) {
	t.Parallel()
	rows := runJSON(t, []string{"--trials", "30", "--judged", "3", "--noise-model", strings.Join(Models, ",")}, noEnv)
	if len(rows) != len(Models) {
		t.Fatalf("%d rows for %d models", len(rows), len(Models))
	}
	for i, r := range rows {
		if r["noise_model"] != Models[i] || r["no_change_nights"].(float64) == 0 {
			t.Errorf("row %d = %v", i, r)
		}
	}
	rows = runJSON(t, []string{"--trials", "20", "--judged", "2", "--recipes", "5", "--metrics", "2"}, noEnv)
	if b := rows[0]["builds"].(float64); b != 40 || rows[0]["build_false_alarm_rate"] == nil {
		t.Errorf("--recipes 5 --metrics 2: %v builds, rate %v; want 40 builds (20 sequences of 2 nights)", b, rows[0]["build_false_alarm_rate"])
	}
	dir := t.TempDir()
	f := baseline.File{Version: baseline.FileVersion, Recipes: map[string]baseline.FileRecipe{"r": {}}}
	fr := f.Recipes["r"]
	for i := range 12 {
		v := 1000 * (1 + 0.01*float64(i%5-2))
		sum, err := json.Marshal(summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: "r",
			Bench: []summary.BenchRun{{Name: "c", Status: summary.StatusOK, Metrics: map[string]float64{"output_throughput": v}}}})
		if err != nil {
			t.Fatal(err)
		}
		fr.Nights = append(fr.Nights, baseline.FileNight{BuildNumber: 100 - i, Summary: sum})
	}
	f.Recipes["r"] = fr
	path := filepath.Join(dir, "baselines.json")
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	rows = runJSON(t, []string{"--trials", "30", "--judged", "3", "--from-history", path, "--recipe", "r"}, noEnv)
	if len(rows) != 1 || rows[0]["noise_model"] != ModelHistory || !(rows[0]["noise_cv"].(float64) > 0.005) {
		t.Errorf("--from-history rows = %v", rows)
	}
	err := command(context.Background(), []string{"--from-history", path, "--recipe", "nope"}, noEnv, io.Discard, io.Discard)
	if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), `has no recipe "nope" (it has r)`) {
		t.Errorf("--recipe nope error = %v", err)
	}
}
