package proc

import (
	"context"
	"errors"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// A second cancel kills every process but the spared ones, which publish
// what exists; KillEverything, the last resort, ends those too. Not
// parallel: KillAll ends every child of the test binary.
func TestKillAllSparesPublishing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("descendants are found through /proc")
	}
	start := func(spare bool) (Process, *syncBuffer) {
		var out syncBuffer
		s := helper("sleep")
		s.Stdout, s.Spare = &out, spare
		p, err := Exec{}.Start(context.Background(), s)
		if err != nil {
			t.Fatalf("Start() error = %v", err)
		}
		out.waitFor(t, "ready")
		return p, &out
	}
	plain, _ := start(false)
	spared, _ := start(true)

	if left := KillAllVerified(5 * time.Second); len(left) != 0 {
		t.Errorf("KillAllVerified left pids %v alive", left)
	}
	select {
	case <-plain.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the process that is not spared still runs after KillAll")
	}
	var ee *ExitError
	if err := plain.Wait(); !errors.As(err, &ee) || ee.Signal != syscall.SIGKILL {
		t.Errorf("plain Wait() = %v, want SIGKILL", err)
	}
	select {
	case <-spared.Done():
		t.Fatalf("KillAll ended the spared process: %v", spared.Wait())
	case <-time.After(200 * time.Millisecond):
	}

	KillEverything()
	select {
	case <-spared.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the spared process still runs after KillEverything")
	}
	if err := spared.Wait(); !errors.As(err, &ee) || ee.Signal != syscall.SIGKILL {
		t.Errorf("spared Wait() = %v, want SIGKILL", err)
	}
}
