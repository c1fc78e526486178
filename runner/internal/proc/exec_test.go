package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRunExitStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		code    string
		wantErr *ExitError
	}{
		{name: "success", code: "0"},
		{name: "failure", code: "3", wantErr: &ExitError{Name: os.Args[0], Code: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out syncBuffer
			s := helper("exit", "PROC_TEST_CODE="+tt.code)
			s.Stdout, s.Stderr = &out, &out
			err := Exec{}.Run(context.Background(), s)

			var got *ExitError
			if err != nil && !errors.As(err, &got) {
				t.Fatalf("Run() error = %v, want an *ExitError", err)
			}
			if diff := cmp.Diff(got, tt.wantErr); diff != "" {
				t.Errorf("Run() error diff (-got +want):\n%s", diff)
			}
			if diff := cmp.Diff(out.String(), "out line\nerr line\n"); diff != "" {
				t.Errorf("output diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestRunSeparateStreams(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	s := helper("exit", "PROC_TEST_CODE=0")
	s.Stdout, s.Stderr = &stdout, &stderr
	if err := (Exec{}).Run(context.Background(), s); err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	if got, want := stdout.String(), "out line\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := stderr.String(), "err line\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
}

func TestRunEnvAndDirAreExplicit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var out bytes.Buffer
	s := helper("env", "FOO=bar")
	s.Dir, s.Stdout = dir, &out
	if err := (Exec{}).Run(context.Background(), s); err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	wantDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "FOO=bar\nHOME set=false\ncwd=" + wantDir + "\n"
	if diff := cmp.Diff(out.String(), want); diff != "" {
		t.Errorf("child saw (-got +want):\n%s", diff)
	}
}

func TestStartLooksUpArgv0InSpecPath(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	if err := os.Symlink(os.Args[0], filepath.Join(bin, "fake-tool")); err != nil {
		t.Fatal(err)
	}
	s := Spec{
		Argv: []string{"fake-tool"},
		Env:  []string{"PATH=" + bin, helperEnv + "=exit", "PROC_TEST_CODE=5"},
	}
	err := Exec{}.Run(context.Background(), s)
	want := &ExitError{Name: "fake-tool", Code: 5}
	var got *ExitError
	if !errors.As(err, &got) {
		t.Fatalf("Run() error = %v, want %v", err, want)
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Run() error diff (-got +want):\n%s", diff)
	}
	if got, want := err.Error(), "fake-tool exited with code 5"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestStartErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		spec     Spec
		wantIs   error
		wantText string
	}{
		{name: "empty argv", spec: Spec{}, wantText: "start: empty argv"},
		{
			name:     "not in PATH",
			spec:     Spec{Argv: []string{"no-such-tool"}, Env: []string{"PATH=" + t.TempDir()}},
			wantIs:   exec.ErrNotFound,
			wantText: "start no-such-tool:",
		},
		{
			name:     "missing path",
			spec:     Spec{Argv: []string{"/nonexistent/tool"}},
			wantIs:   os.ErrNotExist,
			wantText: "start /nonexistent/tool:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := Exec{}.Start(context.Background(), tt.spec)
			if err == nil {
				p.Stop(context.Background())
				t.Fatalf("Start() error = nil, want one")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Start() error = %v, want errors.Is %v", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Start() error = %q, want it to contain %q", err, tt.wantText)
			}
		})
	}
}

func TestOnStartRecordsSpecs(t *testing.T) {
	t.Parallel()
	var got [][]string
	e := Exec{OnStart: func(s Spec) { got = append(got, s.Argv) }}
	s := helper("exit", "PROC_TEST_CODE=0")
	s.Argv = append(s.Argv, "--flag", "value")
	if err := e.Run(context.Background(), s); err != nil {
		t.Fatalf("Run() error = %v", err)
	}
	s.Argv[1] = "changed" // the recording must be a copy
	want := [][]string{{os.Args[0], "--flag", "value"}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("recorded argv (-got +want):\n%s", diff)
	}
}

func TestStop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode       string
		wantSignal syscall.Signal
	}{
		{mode: "sleep", wantSignal: syscall.SIGTERM},
		{mode: "ignore-term", wantSignal: syscall.SIGKILL}, // killed after the grace
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			var out syncBuffer
			s := helper(tt.mode)
			s.Stdout = &out
			p, err := Exec{Grace: 200 * time.Millisecond}.Start(context.Background(), s)
			if err != nil {
				t.Fatalf("Start() error = %v", err)
			}
			out.waitFor(t, "ready")
			if got := p.ExitCode(); got != -1 {
				t.Errorf("ExitCode() while running = %d, want -1", got)
			}
			if err := p.Stop(context.Background()); err != nil {
				t.Errorf("Stop() error = %v", err)
			}
			err = p.Wait()
			var ee *ExitError
			if !errors.As(err, &ee) || ee.Signal != tt.wantSignal || !errors.Is(err, ErrStopped) {
				t.Errorf("Wait() error = %v, want signal %v and ErrStopped", err, tt.wantSignal)
			}
			if got := p.ExitCode(); got != -1 {
				t.Errorf("ExitCode() after a signal = %d, want -1", got)
			}
			assertGroupGone(t, p.Pid())
		})
	}
}

func TestStopCtxEndsFirstKillsAtOnce(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	s := helper("ignore-term")
	s.Stdout = &out
	p, err := Exec{Grace: time.Hour}.Start(context.Background(), s)
	if err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	out.waitFor(t, "ready")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := p.Stop(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop() error = %v, want context.DeadlineExceeded", err)
	}
	var ee *ExitError
	if err := waitDone(t, p); !errors.As(err, &ee) || ee.Signal != syscall.SIGKILL {
		t.Errorf("Wait() error = %v, want killed by SIGKILL", err)
	}
	assertGroupGone(t, p.Pid())
}

func TestStopAfterExit(t *testing.T) {
	t.Parallel()
	p, err := Exec{}.Start(context.Background(), helper("exit", "PROC_TEST_CODE=4"))
	if err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	<-p.Done()
	if err := p.Stop(context.Background()); err != nil {
		t.Errorf("Stop() after exit error = %v", err)
	}
	var ee *ExitError
	if err := p.Wait(); !errors.As(err, &ee) || ee.Code != 4 || ee.Err != nil {
		t.Errorf("Wait() error = %v, want exit code 4 with no stop cause", err)
	}
	if got := p.ExitCode(); got != 4 {
		t.Errorf("ExitCode() = %d, want 4", got)
	}
}

func TestContextCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode       string
		wantSignal syscall.Signal
	}{
		{mode: "sleep", wantSignal: syscall.SIGTERM},
		{mode: "ignore-term", wantSignal: syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out syncBuffer
			s := helper(tt.mode)
			s.Stdout = &out
			p, err := Exec{Grace: 200 * time.Millisecond}.Start(ctx, s)
			if err != nil {
				t.Fatalf("Start() error = %v", err)
			}
			out.waitFor(t, "ready")
			cancel()
			err = waitDone(t, p)
			var ee *ExitError
			if !errors.As(err, &ee) || ee.Signal != tt.wantSignal {
				t.Errorf("Wait() error = %v, want killed by %v", err, tt.wantSignal)
			}
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Wait() error = %v, want errors.Is context.Canceled", err)
			}
			assertGroupGone(t, p.Pid())
		})
	}
}

func TestGrandchildHoldingOutputIsKilled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode  string
		grace time.Duration
	}{
		// The grace is long: Wait must return because the grandchild dies
		// on SIGTERM, not because a timer ran out.
		{mode: "grandchild", grace: time.Hour},
		{mode: "grandchild-ignore-term", grace: 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			var out syncBuffer
			s := helper(tt.mode)
			s.Stdout, s.Stderr = &out, &out
			p, err := Exec{Grace: tt.grace, DrainTimeout: time.Hour}.Start(context.Background(), s)
			if err != nil {
				t.Fatalf("Start() error = %v", err)
			}
			if err := waitDone(t, p); err != nil {
				t.Errorf("Wait() error = %v, want nil (the child exited 0)", err)
			}
			assertPidGone(t, grandchildPid(t, out.String()))
			assertGroupGone(t, p.Pid())
		})
	}
}

func TestEscapedDescendantCannotHangWait(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	s := helper("escape")
	s.Stdout = &out
	p, err := Exec{DrainTimeout: 100 * time.Millisecond}.Start(context.Background(), s)
	if err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	err = waitDone(t, p)
	// It left our group by setsid, so it is the test's to clean up.
	escaped := grandchildPid(t, out.String())
	syscall.Kill(escaped, syscall.SIGKILL)
	if err != nil {
		t.Errorf("Wait() error = %v, want nil", err)
	}
}

func TestGroupAlive(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	s := helper("sleep")
	s.Stdout = &out
	p, err := Exec{}.Start(context.Background(), s)
	if err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	out.waitFor(t, "ready")
	if !groupAlive(p.Pid()) {
		t.Errorf("groupAlive(%d) = false for a running child", p.Pid())
	}
	syscall.Kill(p.Pid(), syscall.SIGKILL)
	waitDone(t, p)
	if groupAlive(p.Pid()) {
		t.Errorf("groupAlive(%d) = true after the child was reaped", p.Pid())
	}
}

func TestExitErrorMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *ExitError
		want string
	}{
		{&ExitError{Name: "lm_eval", Code: 2}, "lm_eval exited with code 2"},
		{&ExitError{Name: "vllm", Code: -1, Signal: syscall.SIGKILL}, "vllm killed by signal 9 (killed)"},
		{
			&ExitError{Name: "vllm", Code: -1, Signal: syscall.SIGTERM, Err: context.Canceled},
			"vllm killed by signal 15 (terminated): context canceled",
		},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestFormatArgv(t *testing.T) {
	t.Parallel()
	got := FormatArgv([]string{"vllm", "serve", "org/model", "--max-model-len=8192", "", "a b", "it's", "$HOME"})
	want := `vllm serve org/model --max-model-len=8192 '' 'a b' 'it'\''s' '$HOME'`
	if got != want {
		t.Errorf("FormatArgv() = %s, want %s", got, want)
	}
}

func BenchmarkStopIgnoringTERM(b *testing.B) {
	const grace = 20 * time.Millisecond
	var total time.Duration
	for b.Loop() {
		b.StopTimer()
		var out syncBuffer
		s := helper("ignore-term")
		s.Stdout = &out
		p, err := Exec{Grace: grace}.Start(context.Background(), s)
		if err != nil {
			b.Fatal(err)
		}
		for !strings.Contains(out.String(), "ready") {
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		start := time.Now()
		if err := p.Stop(context.Background()); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "ms/stop")
	b.ReportMetric(float64(grace.Milliseconds()), "ms-grace")
}

func BenchmarkRun(b *testing.B) {
	s := helper("exit", "PROC_TEST_CODE=0")
	for b.Loop() {
		if err := (Exec{}).Run(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
}

// A server may read a second SIGTERM as "exit now, skip the drain": each
// process of the group, and of the session outside the group, gets
// exactly one before the grace period ends in SIGKILL.
func TestStopSendsOneTERMPerProcess(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	s := helper("count-term", "PROC_TEST_KIDS=1")
	s.Stdout = &out
	p, err := Exec{Grace: 700 * time.Millisecond}.Start(context.Background(), s)
	if err != nil {
		t.Fatalf("Start() error = %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(out.String(), "ready ") < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("helpers not ready: %q", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Errorf("Stop() error = %v", err)
	}
	assertGroupGone(t, p.Pid())
	got := out.String()
	for _, line := range strings.Split(got, "\n") {
		pid, ok := strings.CutPrefix(line, "ready ")
		if !ok {
			continue
		}
		if n := strings.Count(got, pid+" TERM "); n != 1 {
			t.Errorf("process %s got %d SIGTERMs, want 1; output:\n%s", pid, n, got)
		}
	}
}
