package proctest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/runner/internal/proc"
)

// recordingTB catches the failures a Fake reports, so tests can check
// that it does report them.
type recordingTB struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recordingTB) Helper()          {}
func (r *recordingTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recordingTB) Errorf(format string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, a...))
}
func (r *recordingTB) Fatal(a ...any) { r.errors = append(r.errors, fmt.Sprint(a...)) }

func (r *recordingTB) finish() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestFakeScriptsResults(t *testing.T) {
	t.Parallel()
	f := New(t)
	dir := t.TempDir()
	f.Expect("lm_eval").Stdout("done\n").Do(func(s proc.Spec) {
		os.WriteFile(filepath.Join(s.Dir, "results.json"), []byte("{}"), 0o644)
	})
	f.Expect("buildkite-agent", "annotate").Exit(1).Stderr("no agent\n")

	var out bytes.Buffer
	ctx := context.Background()
	if err := f.Run(ctx, proc.Spec{Argv: []string{"/opt/bin/lm_eval", "--model", "m"}, Dir: dir, Stdout: &out}); err != nil {
		t.Errorf("Run(lm_eval) error = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "results.json")); err != nil {
		t.Errorf("Do side effect missing: %v", err)
	}
	err := f.Run(ctx, proc.Spec{Argv: []string{"buildkite-agent", "annotate", "--style", "error"}, Stderr: &out})
	var ee *proc.ExitError
	if !errors.As(err, &ee) || ee.Code != 1 || ee.Name != "buildkite-agent" {
		t.Errorf("Run(buildkite-agent) error = %v, want exit code 1", err)
	}
	if got, want := out.String(), "done\nno agent\n"; got != want {
		t.Errorf("output = %q, want %q", got, want)
	}
	want := [][]string{
		{"/opt/bin/lm_eval", "--model", "m"},
		{"buildkite-agent", "annotate", "--style", "error"},
	}
	if diff := cmp.Diff(f.Argvs(), want); diff != "" {
		t.Errorf("Argvs() diff (-got +want):\n%s", diff)
	}
}

func TestFakeMatchesInOrder(t *testing.T) {
	t.Parallel()
	f := New(t)
	f.Expect("docker").Exit(3)
	f.Expect("docker").Exit(0)
	ctx := context.Background()
	var ee *proc.ExitError
	if err := f.Run(ctx, proc.Spec{Argv: []string{"docker", "pull"}}); !errors.As(err, &ee) || ee.Code != 3 {
		t.Errorf("first docker call error = %v, want exit code 3", err)
	}
	if err := f.Run(ctx, proc.Spec{Argv: []string{"docker", "rm", "-f", "x"}}); err != nil {
		t.Errorf("second docker call error = %v, want nil", err)
	}
}

func TestFakeStartErr(t *testing.T) {
	t.Parallel()
	f := New(t)
	f.Expect("vllm").StartErr(os.ErrNotExist)
	if _, err := f.Start(context.Background(), proc.Spec{Argv: []string{"vllm"}}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Start() error = %v, want os.ErrNotExist", err)
	}
}

func TestFakeUntilStopped(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		end       func(c *Call, p proc.Process, cancel context.CancelFunc)
		wantCode  int
		wantCause error
	}{
		{
			name:      "stop",
			end:       func(_ *Call, p proc.Process, _ context.CancelFunc) { p.Stop(context.Background()) },
			wantCode:  -1,
			wantCause: proc.ErrStopped,
		},
		{
			name:      "context",
			end:       func(_ *Call, _ proc.Process, cancel context.CancelFunc) { cancel() },
			wantCode:  -1,
			wantCause: context.Canceled,
		},
		{
			name:     "crash",
			end:      func(c *Call, _ proc.Process, _ context.CancelFunc) { c.Finish(1) },
			wantCode: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := New(t)
			server := f.Expect("vllm", "serve").UntilStopped()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, err := f.Start(ctx, proc.Spec{Argv: []string{"vllm", "serve", "m"}})
			if err != nil {
				t.Fatalf("Start() error = %v", err)
			}
			select {
			case <-p.Done():
				t.Fatal("UntilStopped process ended by itself")
			default:
			}
			tt.end(server, p, cancel)
			err = p.Wait()
			if p.ExitCode() != tt.wantCode {
				t.Errorf("ExitCode() = %d, want %d", p.ExitCode(), tt.wantCode)
			}
			if err == nil || (tt.wantCause != nil && !errors.Is(err, tt.wantCause)) {
				t.Errorf("Wait() error = %v, want an error with cause %v", err, tt.wantCause)
			}
		})
	}
}

func TestFakeReportsMisuse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		play func(f *Fake)
		want []string
	}{
		{
			name: "unexpected command",
			play: func(f *Fake) { f.Run(context.Background(), proc.Spec{Argv: []string{"rm", "-rf", "x"}}) },
			want: []string{"proctest: unexpected command: rm -rf x"},
		},
		{
			name: "argv prefix differs",
			play: func(f *Fake) {
				f.Expect("buildkite-agent", "meta-data", "set")
				f.Run(context.Background(), proc.Spec{Argv: []string{"buildkite-agent", "meta-data", "get"}})
			},
			want: []string{
				"proctest: unexpected command: buildkite-agent meta-data get",
				"proctest: expected commands never run:\n\tbuildkite-agent meta-data set",
			},
		},
		{
			name: "unused expectation",
			play: func(f *Fake) { f.Expect("lm_eval") },
			want: []string{"proctest: expected commands never run:\n\tlm_eval"},
		},
		{
			name: "server left running",
			play: func(f *Fake) {
				f.Expect("vllm").UntilStopped()
				f.Start(context.Background(), proc.Spec{Argv: []string{"vllm"}})
			},
			want: []string{"proctest: vllm (pid 4194305) still running at the end of the test"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tb := &recordingTB{}
			tt.play(New(tb))
			tb.finish()
			if diff := cmp.Diff(tb.errors, tt.want); diff != "" {
				t.Errorf("reported failures (-got +want):\n%s", diff)
			}
		})
	}
}

func TestFakePidIsNoRealProcess(t *testing.T) {
	t.Parallel()
	f := New(t)
	f.Expect("vllm")
	p, err := f.Start(context.Background(), proc.Spec{Argv: []string{"vllm"}})
	if err != nil {
		t.Fatal(err)
	}
	// Code under test may signal the group; that must reach nobody.
	if err := syscall.Kill(-p.Pid(), 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("kill(-%d, 0) = %v, want ESRCH", p.Pid(), err)
	}
	if p.Pid() <= 1<<22 {
		t.Errorf("Pid() = %d, want one above the largest pid_max", p.Pid())
	}
}
