package main

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/cliutil"
)

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

// TestHelpListsCommands: `runner help` lists every subcommand on one line
// each, and each command's -h names its flags, none of them with a
// made-up argument name.
func TestHelpListsCommands(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"--help"}, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(nil), nil); code != 0 {
		t.Fatalf("runner --help = %d", code)
	}
	for _, name := range []string{"run", "plan", "history", "report", "calibrate"} {
		if !regexp.MustCompile(`(?m)^  ` + name + `( RECIPE)? +\S.*\n`).MatchString(stdout.String()) {
			t.Errorf("runner --help has no one-line entry for %s:\n%s", name, stdout.String())
		}
	}
	for _, c := range commands {
		var stdout, stderr strings.Builder
		args := []string{c.name, "-h"}
		if code := run(context.Background(), args, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(nil), nil); code != 0 {
			t.Errorf("runner %s -h = %d", c.name, code)
		}
		help := stderr.String()
		if !strings.HasPrefix(help, "Usage: runner "+c.name) {
			t.Errorf("runner %s -h starts %q", c.name, firstLine(help))
		}
		// flag.PrintDefaults reads a `quoted` word in a usage as the
		// argument's name: "-baselines runner history".
		if m := regexp.MustCompile(`(?m)^  -\S+ (\S+ \S+)\n`).FindStringSubmatch(help); m != nil {
			t.Errorf("runner %s -h shows a two-word argument name %q", c.name, m[1])
		}
	}
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// envRE finds the variable a flag's help names.
var envRE = regexp.MustCompile(`\(env ([A-Z][A-Z0-9_]+)`)

// TestEveryFlagHasItsEnv: every flag of every subcommand names an
// environment variable in its help, and setting that variable changes the
// flag's value.
func TestEveryFlagHasItsEnv(t *testing.T) {
	t.Parallel()
	for _, c := range commands {
		fs, _, _ := c.flagSet(io.Discard, mapGetenv(nil))
		fs.VisitAll(func(f *flag.Flag) {
			m := envRE.FindStringSubmatch(f.Usage)
			if f.Name == "base-url" && (c.name == "run" || c.name == "plan" || c.name == "replay") {
				// The one exception: attaching must be asked for on the
				// command line, never by a variable left in the environment.
				if m != nil {
					t.Errorf("runner %s --base-url names a variable: %q", c.name, f.Usage)
				}
				return
			}
			if m == nil {
				t.Errorf("runner %s --%s names no environment variable: %q", c.name, f.Name, f.Usage)
				return
			}
			if !envChangesFlag(func(getenv func(string) string) *flag.FlagSet {
				fs, env, _ := c.flagSet(io.Discard, getenv)
				if env.Err() != nil {
					return nil
				}
				return fs
			}, f, m[1]) {
				t.Errorf("runner %s --%s: setting %s changes nothing", c.name, f.Name, m[1])
			}
		})
	}
}

// envChangesFlag says whether some value of the variable name, read when
// the flag set is built, changes flag f from its default.
func envChangesFlag(build func(getenv func(string) string) *flag.FlagSet, f *flag.Flag, name string) bool {
	for _, v := range []string{"1", "7", "0.07", "7s", "from-env"} {
		fs := build(mapGetenv(map[string]string{name: v}))
		if fs == nil {
			continue
		}
		if got := fs.Lookup(f.Name).Value.String(); got != f.Value.String() {
			return true
		}
	}
	return false
}

// TestSubcommandEnv: values from the environment reach the commands that
// moved their parsing here, and a flag wins over them.
func TestSubcommandEnv(t *testing.T) {
	t.Parallel()
	var stdout, stderr strings.Builder
	env := map[string]string{"BENCHKITE_CALIBRATE_TRIALS": "40", "BENCHKITE_CALIBRATE_NOISE_CV": "0.01,0.05", "BENCHKITE_CALIBRATE_SEED": "3"}
	if code := run(context.Background(), []string{"calibrate", "--json", "--trials", "20"}, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(env), nil); code != 0 {
		t.Fatalf("calibrate = %d: %s", code, stderr.String())
	}
	dec := json.NewDecoder(strings.NewReader(stdout.String()))
	var rows []map[string]any
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, m)
	}
	if len(rows) != 2 || rows[0]["trials"] != 20.0 || rows[1]["noise_cv"] != 0.05 || rows[0]["seed"] != 3.0 {
		t.Errorf("calibrate with env %v and --trials 20 = %v", env, rows)
	}

	dir := t.TempDir()
	stdout.Reset()
	code := run(context.Background(), []string{"report"}, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(map[string]string{"BENCHKITE_RESULTS": dir, "BENCHKITE_DOWNLOAD": "0"}), nil)
	if _, err := os.Stat(filepath.Join(dir, "_report", "trends.html")); code != 0 || err != nil {
		t.Errorf("report with BENCHKITE_RESULTS = %d, trend page in it: %v\n%s", code, err, stdout.String())
	}
}

// TestSubcommandUsageErrors: every subcommand rejects operands and bad
// flags the same way, with exit 2.
func TestSubcommandUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"report", "extra"}, want: `report takes no arguments, got ["extra"]`},
		{args: []string{"report", "--download=maybe"}, want: "invalid boolean value"},
		{args: []string{"report"}, env: map[string]string{"BENCHKITE_DOWNLOAD": "maybe"}, want: "env BENCHKITE_DOWNLOAD"},
		{args: []string{"history", "extra"}, want: `history takes no arguments, got ["extra"]`},
		{args: []string{"history", "--needs", "a-h200\tmany"}, want: "line 1"},
		{args: []string{"calibrate", "extra"}, want: `calibrate takes no arguments, got ["extra"]`},
		{args: []string{"calibrate", "--step-pct", "3,x"}, want: `"x" is not a number`},
		{args: []string{"calibrate", "--nights", "4"}, want: "--nights 4 is below --min-history 5"},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), tt.args, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(tt.env), nil)
		if code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("run(%q) = %d, stderr %q; want 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
}
