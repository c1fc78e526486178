package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/cliutil"
)

// result is what one run of the command left behind.
type result struct {
	code           int
	stdout, stderr string
}

// runGenerator runs the command as main would, with env as the whole
// environment.
func runGenerator(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapEnv(env))
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// Bad input fails with a message on stderr, a non-zero exit, and nothing on
// stdout: a pipeline step that pipes stdout into an upload must never
// upload half a pipeline.
func TestBadInputPrintsNothingOnStdout(t *testing.T) {
	t.Parallel()
	shipped := []string{"--workloads", "../testdata/workloads", "--agents", "../agents/profiles.yaml"}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		code int
		// stderr must contain every one of these.
		stderr []string
	}{
		{
			name:   "unknown command",
			args:   []string{"launch"},
			code:   2,
			stderr: []string{`unknown command "launch"`, "Usage:"},
		},
		{
			name:   "unknown flag",
			args:   []string{"--workload", "../testdata/workloads"},
			code:   2,
			stderr: []string{"flag provided but not defined: -workload"},
		},
		{
			name:   "pipeline with an argument",
			args:   append([]string{"pipeline"}, append(shipped, "extra")...),
			code:   2,
			stderr: []string{"pipeline takes no arguments", "extra"},
		},
		{
			name:   "missing recipe directory",
			args:   []string{"--workloads", "testdata/no-such-dir"},
			code:   1,
			stderr: []string{"testdata/no-such-dir"},
		},
		{
			name:   "missing profile file",
			args:   []string{"--agents", "testdata/no-such-profiles.yaml"},
			code:   1,
			stderr: []string{"testdata/no-such-profiles.yaml"},
		},
		{
			name:   "WORKLOADS names an unknown recipe",
			args:   shipped,
			env:    map[string]string{"WORKLOADS": "gpt_oss_120b-h200,gpt_oss_120b-h100"},
			code:   1,
			stderr: []string{"WORKLOADS names no recipe: gpt_oss_120b-h100", "close: gpt_oss_120b-h200"},
		},
		{
			name:   "WORKLOADS is only separators",
			args:   shipped,
			env:    map[string]string{"WORKLOADS": " ,\n, "},
			code:   1,
			stderr: []string{"WORKLOADS is set but names nothing"},
		},
		{
			name:   "VLLM_COMMIT is not a commit",
			args:   shipped,
			env:    map[string]string{"BUILDKITE_SOURCE": "schedule", "VLLM_COMMIT": "main; rm -rf /"},
			code:   1,
			stderr: []string{`VLLM_COMMIT "main; rm -rf /" must be 7 to 40 lower-case hex digits`},
		},
		{
			name:   "VLLM_IMAGE is not an image",
			args:   shipped,
			env:    map[string]string{"WORKLOADS": "gpt_oss_120b-h200", "VLLM_IMAGE": "Not An Image"},
			code:   1,
			stderr: []string{"VLLM_IMAGE", `"Not An Image" is not a valid image reference`},
		},
		{
			name:   "explain without a name",
			args:   append([]string{"explain"}, shipped...),
			code:   2,
			stderr: []string{"explain takes one recipe name or path"},
		},
		{
			name:   "explain with a bad VLLM_COMMIT",
			args:   append([]string{"explain"}, append(shipped, "gpt_oss_120b-h200")...),
			env:    map[string]string{"VLLM_COMMIT": "HEAD"},
			code:   1,
			stderr: []string{`VLLM_COMMIT "HEAD"`},
		},
		{
			name:   "lint with an argument",
			args:   append([]string{"lint"}, append(shipped, "gpt_oss_120b-h200")...),
			code:   2,
			stderr: []string{"lint takes no arguments"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := runGenerator(t, tt.env, tt.args...)
			if got.code != tt.code {
				t.Errorf("exit code = %d, want %d\nstderr:\n%s", got.code, tt.code, got.stderr)
			}
			if got.stdout != "" {
				t.Errorf("stdout = %q, want nothing on bad input", got.stdout)
			}
			for _, want := range tt.stderr {
				if !strings.Contains(got.stderr, want) {
					t.Errorf("stderr does not say %q:\n%s", want, got.stderr)
				}
			}
		})
	}
}

func TestHelpPrintsUsage(t *testing.T) {
	t.Parallel()
	got := runGenerator(t, nil, "help")
	if got.code != 0 || !strings.Contains(got.stdout, "explain NAME|PATH") || got.stderr != "" {
		t.Errorf("help = %+v, want usage on stdout and exit 0", got)
	}
}

// TestHelpListsCommands: `generator --help` lists every subcommand on one
// line each, not only the default command's flags.
func TestHelpListsCommands(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		got := runGenerator(t, nil, args...)
		if got.code != 0 {
			t.Errorf("generator %q = %d", args, got.code)
		}
		for _, c := range commands {
			if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(strings.TrimSpace(c.name+" "+c.operands)) + ` +\S.*$`).MatchString(got.stdout) {
				t.Errorf("generator %q has no one-line entry for %s:\n%s", args, c.name, got.stdout)
			}
		}
	}
	for _, c := range commands {
		got := runGenerator(t, nil, c.name, "-h")
		if got.code != 0 || !strings.HasPrefix(got.stderr, "Usage: generator "+c.name) {
			t.Errorf("generator %s -h = %d, %q", c.name, got.code, firstLine(got.stderr))
		}
	}
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

// TestEveryFlagHasItsEnv: every flag of every subcommand names an
// environment variable in its help, and setting that variable changes the
// flag's value.
func TestEveryFlagHasItsEnv(t *testing.T) {
	t.Parallel()
	envRE := regexp.MustCompile(`\(env ([A-Z][A-Z0-9_]+)`)
	for _, c := range commands {
		fs, _, _ := c.flagSet(io.Discard, mapEnv(nil))
		fs.VisitAll(func(f *flag.Flag) {
			m := envRE.FindStringSubmatch(f.Usage)
			if m == nil {
				t.Errorf("generator %s --%s names no environment variable: %q", c.name, f.Name, f.Usage)
				return
			}
			changed := false
			for _, v := range []string{"1", "0", "7", "from-env"} {
				fs, env, _ := c.flagSet(io.Discard, mapEnv(map[string]string{m[1]: v}))
				if env.Err() == nil && fs.Lookup(f.Name).Value.String() != f.Value.String() {
					changed = true
				}
			}
			if !changed {
				t.Errorf("generator %s --%s: setting %s changes nothing", c.name, f.Name, m[1])
			}
		})
	}
}
