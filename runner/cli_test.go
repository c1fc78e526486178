package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/google/go-cmp/cmp"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	// Only the fields flags and env set; the gate and ingest settings have
	// their own flags and defaults.
	type parsed struct {
		RecipePath    string
		ResultsDir    string
		Port          int
		HealthTimeout time.Duration
		BaseURL       string
		BenchOnly     bool
		Grace         time.Duration
	}
	// HealthTimeout 0: the recipe's vllm.startup_timeout_s decides.
	defaults := parsed{RecipePath: "r.yaml", Port: 8000, HealthTimeout: 0, Grace: 10 * time.Second}
	with := func(f func(*parsed)) parsed { p := defaults; f(&p); return p }
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want parsed
	}{
		{"defaults", []string{"r.yaml"}, nil, defaults},
		{
			name: "env fallbacks",
			args: []string{"r.yaml"},
			env: map[string]string{"BENCHKITE_PORT": " 9001 ", "BENCHKITE_HEALTH_TIMEOUT": "90m", "BENCH_ONLY": "1",
				"BENCHKITE_RESULTS": "out/r", "BENCHKITE_GRACE": "30s", "BENCHKITE_BASE_URL": "http://127.0.0.1:7000"},
			want: with(func(p *parsed) {
				p.Port, p.HealthTimeout, p.BenchOnly, p.ResultsDir, p.Grace, p.BaseURL = 9001, 90*time.Minute, true, "out/r", 30*time.Second, "http://127.0.0.1:7000"
			}),
		},
		{"BENCH_ONLY spelled true", []string{"r.yaml"}, map[string]string{"BENCH_ONLY": "TRUE"}, with(func(p *parsed) { p.BenchOnly = true })},
		{"BENCH_ONLY off", []string{"r.yaml"}, map[string]string{"BENCH_ONLY": "0"}, defaults},
		{
			name: "flags win over env",
			args: []string{"--port", "9002", "--health-timeout", "5m", "--results", "flag/r", "r.yaml"},
			env:  map[string]string{"BENCHKITE_PORT": "9001", "BENCHKITE_HEALTH_TIMEOUT": "90m", "BENCHKITE_RESULTS": "out/r"},
			want: with(func(p *parsed) { p.Port, p.HealthTimeout, p.ResultsDir = 9002, 5*time.Minute, "flag/r" }),
		},
		{
			name: "flags after the recipe path",
			args: []string{"r.yaml", "--port", "9003", "--bench-only", "-grace=0s"},
			want: with(func(p *parsed) { p.Port, p.BenchOnly, p.Grace = 9003, true, 0 }),
		},
		{
			name: "flags on both sides",
			args: []string{"--bench-only=false", "r.yaml", "--port=9004"},
			env:  map[string]string{"BENCH_ONLY": "yes"},
			want: with(func(p *parsed) { p.Port = 9004 }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stderr strings.Builder
			c, err := parseConfig("run", tt.args, &stderr, mapGetenv(tt.env))
			if err != nil {
				t.Fatalf("parseConfig(%q) error = %v; stderr:\n%s", tt.args, err, stderr.String())
			}
			got := parsed{c.recipePath, c.job.ResultsDir, c.job.Port, c.job.HealthTimeout, c.job.BaseURL, c.job.BenchOnly, c.job.Grace}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("parseConfig(%q) diff (-got +want):\n%s", tt.args, diff)
			}
		})
	}
}

func TestParseConfigBaselines(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"r.yaml"}, want: ""},
		{args: []string{"r.yaml"}, env: map[string]string{"BENCHKITE_BASELINES": "from-env.json"}, want: "from-env.json"},
		{args: []string{"--baselines", "h.json", "r.yaml"}, env: map[string]string{"BENCHKITE_BASELINES": "from-env.json"}, want: "h.json"},
	} {
		c, err := parseConfig("run", tt.args, io.Discard, mapGetenv(tt.env))
		if err != nil {
			t.Fatal(err)
		}
		if c.job.Baselines != tt.want {
			t.Errorf("parseConfig(%q, env %v).Baselines = %q, want %q", tt.args, tt.env, c.job.Baselines, tt.want)
		}
	}
	// The API flags moved to `runner history`: a GPU job has no token.
	if _, err := parseConfig("run", []string{"r.yaml", "--api-token-env", "MY_TOKEN"}, io.Discard, mapGetenv(nil)); err == nil {
		t.Errorf("parseConfig(--api-token-env) = nil error, want the flag unknown to run")
	}
}

// TestUsageErrors: a command line or environment that does not parse exits
// 2 and says why, for run and plan alike.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantStderr string
	}{
		{"no command", nil, nil, "Usage:"},
		{"unknown command", []string{"serve"}, nil, `unknown command "serve"`},
		{"missing recipe", []string{"run"}, nil, "run takes one recipe path, got 0"},
		{"missing recipe after flags", []string{"plan", "--port", "9000"}, nil, "plan takes one recipe path, got 0"},
		{"two recipes", []string{"plan", seedRecipe, dockerRecipe}, nil, "plan takes one recipe path, got 2"},
		{"port zero", []string{"run", seedRecipe, "--port", "0"}, nil, "--port 0 is not a port"},
		{"port too big", []string{"plan", "--port", "65536", seedRecipe}, nil, "--port 65536 is not a port"},
		{"port not a number", []string{"plan", seedRecipe, "--port", "eighty"}, nil, `invalid value "eighty" for flag -port`},
		{"port from env too big", []string{"plan", seedRecipe}, map[string]string{"BENCHKITE_PORT": "70000"}, "--port 70000 is not a port"},
		{"port from env not a number", []string{"plan", seedRecipe}, map[string]string{"BENCHKITE_PORT": "http"}, `env BENCHKITE_PORT: "http" is not a whole number`},
		{"health timeout from env without unit", []string{"plan", seedRecipe}, map[string]string{"BENCHKITE_HEALTH_TIMEOUT": "7200"}, "env BENCHKITE_HEALTH_TIMEOUT: time: missing unit"},
		{"BENCH_ONLY not a boolean", []string{"plan", seedRecipe}, map[string]string{"BENCH_ONLY": "sometimes"}, `env BENCH_ONLY: "sometimes" is not a boolean`},
		{"zero health timeout", []string{"plan", seedRecipe, "--health-timeout", "0s"}, nil, "--health-timeout must be positive"},
		{"unknown flag", []string{"run", seedRecipe, "--no-such-flag"}, nil, "flag provided but not defined: -no-such-flag"},
		{"calibrate: unknown flag", []string{"calibrate", "--no-such-flag"}, nil, "flag provided but not defined: -no-such-flag"},
		{"calibrate: bad env", []string{"calibrate"}, map[string]string{"BENCHKITE_CALIBRATE_TRIALS": "many"}, "BENCHKITE_CALIBRATE_TRIALS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr strings.Builder
			code := run(context.Background(), tt.args, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(tt.env), environOf(tt.env))
			if code != 2 {
				t.Errorf("run(%q) = %d, want 2", tt.args, code)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"--help"}, {"plan", "-h"}, {"run", seedRecipe, "-h"}, {"report", "-h"}} {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), args, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(nil), nil); code != 0 {
			t.Errorf("run(%q) = %d, want 0; stderr:\n%s", args, code, stderr.String())
		}
		if stdout.Len()+stderr.Len() == 0 {
			t.Errorf("run(%q) printed no help", args)
		}
	}
}

// TestInvalidRecipeStartsNothing: a recipe with errors exits 1, every
// problem at path:line:col, before the results directory exists, so no
// process can have been started.
func TestInvalidRecipeStartsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.yaml")
	recipe := `name: bad-mi355x
gpu: MI355X
num_gpus: 8
vllm:
  model: org/model
  serve_args: --tensor-parallel-size 8
  bogus: 1
lm_eval:
  tasks:
    - name: gsm8k
      num_fewshot: many
`
	if err := os.WriteFile(path, []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"run", "plan"} {
		t.Run(cmd, func(t *testing.T) {
			t.Parallel()
			results := filepath.Join(dir, cmd+"-results")
			var stdout, stderr strings.Builder
			code := run(context.Background(), []string{cmd, path, "--results", results}, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(nil), nil)
			if code != 1 {
				t.Errorf("run %s = %d, want 1", cmd, code)
			}
			for _, re := range []string{
				`(?m)^` + regexp.QuoteMeta(path) + `:7:3: .*bogus`,
				`(?m)^` + regexp.QuoteMeta(path) + `:11:\d+: .*num_fewshot`,
			} {
				if !regexp.MustCompile(re).MatchString(stderr.String()) {
					t.Errorf("stderr does not match %s:\n%s", re, stderr.String())
				}
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
			if _, err := os.Stat(results); !os.IsNotExist(err) {
				t.Errorf("results directory exists (stat error %v): the job started", err)
			}
		})
	}
}

func TestMissingRecipeFile(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"plan", "testdata/recipes/none.yaml"}, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(nil), nil)
	if code != 1 || !strings.Contains(stderr.String(), "read recipe: open testdata/recipes/none.yaml") {
		t.Errorf("plan of a missing file = %d, stderr %q; want 1 naming the file", code, stderr.String())
	}
}

// TestCalibrateJSON: runner calibrate prints the two numbers the README
// quotes, under the keys the issue names.
func TestCalibrateJSON(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"calibrate", "--trials", "300", "--json"}, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(nil), nil)
	if code != 0 {
		t.Fatalf("calibrate = %d; stderr:\n%s", code, stderr.String())
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil {
		t.Fatalf("calibrate --json printed %q: %v", stdout.String(), err)
	}
	for _, k := range []string{"false_positive_rate", "power"} {
		if _, ok := got[k].(float64); !ok {
			t.Errorf("calibrate --json lacks a number %q: %v", k, got)
		}
	}
}
