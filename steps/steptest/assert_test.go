package steptest_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/steps/steptest"
)

// recorder is a testing.TB that records failures and skips instead of
// acting on them, so that the assertions themselves can be tested.
type recorder struct {
	testing.TB
	failed, skipped bool
	log             strings.Builder
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.failed = true
	fmt.Fprintf(&r.log, format+"\n", args...)
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) {
	r.Fatalf("%s", fmt.Sprint(args...))
}

func (r *recorder) Skipf(format string, args ...any) {
	r.skipped = true
	fmt.Fprintf(&r.log, format+"\n", args...)
	runtime.Goexit()
}

// run calls f with a recorder in its own goroutine, as Fatalf and Skipf
// end the goroutine.
func run(t *testing.T, f func(testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

const valid = `{"steps": [{"command": "echo hi", "key": "hi"}]}`

func TestAssertSchemaValid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, json string
		fail       bool
	}{
		{"valid", valid, false},
		{"unknown attribute", `{"steps": [{"command": "x", "bogus": 1}]}`, true},
		{"key with a space", `{"steps": [{"command": "x", "key": "a b"}]}`, true},
		{"skip reason too long", `{"steps": [{"command": "x", "skip": "` + strings.Repeat("x", 71) + `"}]}`, true},
		{"no steps", `{"env": {}}`, true},
		{"not JSON", `{`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, func(tb testing.TB) { steptest.AssertSchemaValid(tb, []byte(tt.json)) })
			if r.skipped {
				t.Skip(r.log.String())
			}
			if r.failed != tt.fail {
				t.Errorf("AssertSchemaValid(%s) failed = %v, want %v; log:\n%s", tt.json, r.failed, tt.fail, r.log.String())
			}
		})
	}
}

func TestAssertGoPipelineParses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, json string
		fail       bool
	}{
		{"valid", valid, false},
		{"step of no known type", `{"steps": [{"label": "x"}]}`, true},
		{"unknown step type", `{"steps": [{"type": "teleport"}]}`, true},
		{"no steps", `{"env": {"A": "1"}}`, true},
		{"not JSON", `{"steps": [`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, func(tb testing.TB) { steptest.AssertGoPipelineParses(tb, []byte(tt.json)) })
			if r.failed != tt.fail {
				t.Errorf("AssertGoPipelineParses(%s) failed = %v, want %v; log:\n%s", tt.json, r.failed, tt.fail, r.log.String())
			}
		})
	}
}

func TestAgentAssertions(t *testing.T) {
	t.Parallel()
	agent := steptest.AgentBinary(t)
	tests := []struct {
		name, json string
		fail       bool
	}{
		{"valid", valid, false},
		{"commands list reads as one command", `{"steps": [{"commands": ["a", "b"], "plugins": ["docker#v1"]}]}`, false},
		{"escaped dollar", `{"steps": [{"command": "echo $$HOME"}]}`, true},
		{"interpolated variable", `{"steps": [{"command": "echo ${MISSING:-default}"}]}`, true},
		{"step of no known type", `{"steps": [{"label": "x"}]}`, true},
		{"not a pipeline", `[1, 2]`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, func(tb testing.TB) { steptest.AssertUnchangedByAgent(tb, agent, []byte(tt.json)) })
			if r.failed != tt.fail {
				t.Errorf("AssertUnchangedByAgent(%s) failed = %v, want %v; log:\n%s", tt.json, r.failed, tt.fail, r.log.String())
			}
		})
	}

	t.Run("agent reads escaped form as plain form", func(t *testing.T) {
		t.Parallel()
		r := run(t, func(tb testing.TB) {
			steptest.AssertAgentReads(tb, agent,
				[]byte(`{"steps": [{"command": "echo $$HOME $${X:-y}"}]}`),
				[]byte(`{"steps": [{"command": "echo $HOME ${X:-y}"}]}`))
		})
		if r.failed {
			t.Errorf("AssertAgentReads failed:\n%s", r.log.String())
		}
	})

	t.Run("dry run sees a clean environment", func(t *testing.T) {
		t.Parallel()
		out := steptest.DryRun(t, agent, []byte(`{"steps": [{"command": "echo [$HOME] [$BUILDKITE_JOB_ID]"}]}`))
		got := out["steps"].([]any)[0].(map[string]any)["command"]
		if want := "echo [] [steptest-job]"; got != want {
			t.Errorf("DryRun command = %q, want %q", got, want)
		}
	})
}

// Not parallel: it sets environment variables.
func TestAgentBinaryMissing(t *testing.T) {
	t.Setenv("BUILDKITE_AGENT_BIN", filepath.Join(t.TempDir(), "no-such-agent"))

	t.Setenv("CI", "")
	if r := run(t, func(tb testing.TB) { steptest.AgentBinary(tb) }); !r.skipped || r.failed || !strings.Contains(r.log.String(), "make agent") {
		t.Errorf("AgentBinary outside CI: skipped = %v, failed = %v, log %q; want a skip that says to run make agent", r.skipped, r.failed, r.log.String())
	}

	t.Setenv("CI", "true")
	if r := run(t, func(tb testing.TB) { steptest.AgentBinary(tb) }); !r.failed || r.skipped {
		t.Errorf("AgentBinary in CI: failed = %v, skipped = %v; want a failure", r.failed, r.skipped)
	}
}
