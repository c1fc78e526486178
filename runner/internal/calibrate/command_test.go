package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// with is the defaults changed by f.
func with(f func(*Config)) Config {
	c := Defaults()
	if f != nil {
		f(&c)
	}
	return c
}

func runJSON(t *testing.T, c Config) []map[string]any {
	t.Helper()
	c.JSON = true
	var out bytes.Buffer
	if err := Measure(context.Background(), c, &out); err != nil {
		t.Fatalf("Measure(%+v) error = %v", c, err)
	}
	var rows []map[string]any
	dec := json.NewDecoder(&out)
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("Measure(%+v) printed bad JSON: %v", c, err)
		}
		rows = append(rows, m)
	}
	return rows
}

// TestDefaultsMeetTargets is the claim the detector's defaults rest on.
func TestDefaultsMeetTargets(t *testing.T) {
	t.Parallel()
	rows := runJSON(t, Defaults())
	if len(rows) != 1 {
		t.Fatalf("default run printed %d results, want 1", len(rows))
	}
	r := rows[0]
	if r["noise_cv"].(float64)*300 != r["step_pct"].(float64) {
		t.Errorf("default step %v%% is not three times the noise %v", r["step_pct"], r["noise_cv"])
	}
	if fp := r["false_positive_rate"].(float64); fp > 0.01 {
		t.Errorf("false_positive_rate = %v at the defaults, want <= 0.01", fp)
	}
	if p := r["power"].(float64); p < 0.90 {
		t.Errorf("power = %v at the defaults, want >= 0.90", p)
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	c := with(func(c *Config) { c.Trials, c.NoiseCV, c.StepPct, c.Seed = 300, FloatList{0.03}, FloatList{6, 9}, 5 })
	a := runJSON(t, c)
	b := runJSON(t, c)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two runs with seed 5 differ (-first +second):\n%s", diff)
	}
	c.Seed = 6
	if d := runJSON(t, c); cmp.Equal(a, d) {
		t.Errorf("seeds 5 and 6 gave the same results %v", a)
	}
	// Each noise level shares one no-change stream across steps.
	if a[0]["false_positives"] != a[1]["false_positives"] {
		t.Errorf("false positives differ between steps of one noise level: %v, %v", a[0]["false_positives"], a[1]["false_positives"])
	}
}

func TestPowerGrowsWithStep(t *testing.T) {
	t.Parallel()
	rows := runJSON(t, with(func(c *Config) { c.Trials, c.NoiseCV, c.StepPct = 2000, FloatList{0.02}, FloatList{0, 2, 6, 20} }))
	var power []float64
	for _, r := range rows {
		power = append(power, r["power"].(float64))
	}
	if !(power[0] < 0.05 && power[1] < power[2] && power[2] < power[3] && power[3] == 1) {
		t.Errorf("power at steps 0, 2, 6, 20%% = %v; want rising from near 0 to 1", power)
	}
	// A floor above the step stops every flag.
	rows = runJSON(t, with(func(c *Config) { c.Trials, c.StepPct, c.MinEffect = 500, FloatList{6}, 12 }))
	if p := rows[0]["power"].(float64); p != 0 {
		t.Errorf("power with a 12%% floor and a 6%% step = %v, want 0", p)
	}
}

func TestText(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := Measure(context.Background(), with(func(c *Config) { c.Trials, c.NoiseCV, c.StepPct = 100, FloatList{0.01, 0.02}, FloatList{3, 6} }), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"30 past nights, 100 trials per setting, seed 1\n", "noise CV  false positives/night  step 3%  step 6%\n", "\n1%  ", "\n2%  "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("Measure() printed\n%s\nwant it to contain %q", out.String(), want)
		}
	}
}

func TestImpossibleValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		set  func(*Config)
		want string
	}{
		{name: "percent as cv", set: func(c *Config) { c.NoiseCV = FloatList{2} }, want: "--noise-cv 2 is not in (0, 1)"},
		{name: "too few nights", set: func(c *Config) { c.Nights = 5 }, want: "--nights 5 is below --min-history 20"},
		{name: "no trials", set: func(c *Config) { c.Trials = 0 }, want: "--trials 0"},
		{name: "bad detector", set: func(c *Config) { c.FalseAlarm = 0.9 }, want: "false-alarm rate 0.9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Measure(context.Background(), with(tt.set), &bytes.Buffer{})
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Measure() error = %v, want ErrUsage containing %q", err, tt.want)
			}
		})
	}
}

func TestFloatList(t *testing.T) {
	t.Parallel()
	var l FloatList
	if err := l.Set("0.01, 2"); err != nil || !cmp.Equal(l, FloatList{0.01, 2}) || l.String() != "0.01,2" {
		t.Errorf("Set(\"0.01, 2\") = %v, %v (%q)", l, err, l.String())
	}
	if err := l.Set("3,x"); err == nil || !strings.Contains(err.Error(), `"x" is not a number`) {
		t.Errorf("Set(\"3,x\") error = %v", err)
	}
}

func TestCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Measure(ctx, Defaults(), &bytes.Buffer{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Measure(canceled) error = %v, want context.Canceled", err)
	}
}
