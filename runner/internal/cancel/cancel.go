// Package cancel turns the signals a job receives into one cancel of the
// run, and a real second cancel into killing every process but those
// that publish what exists. Agents, timeout and tini deliver one cancel
// more than once; only a second one, past RepeatWindow, hurries.
package cancel

import (
	"context"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/benchkite/benchkite/runner/internal/proc"
)

// RepeatWindow: signals this soon after the first are the same cancel
// delivered twice. GNU timeout sends SIGTERM to the runner and then to its
// process group; tini, forwarding shell wrappers and the agent plus the
// kubelet do the same. Read as a second cancel, the copy would cut the
// server's grace period and the upload short.
const RepeatWindow = 2 * time.Second

// SecondCancelBudget bounds the cleanup after a real second cancel: every
// process is already killed but an artifact upload or annotation in
// flight, which is left to finish; only removing a container, the summary
// and the upload are left.
const SecondCancelBudget = 5 * time.Second

// KillVerifyTimeout bounds the wait, after SIGKILL, for the process table
// to show no process of the run.
const KillVerifyTimeout = 2 * time.Second

// Canceler turns the signals a job receives into one cancel, and a real
// second one into killing every process before the run publishes what
// exists.
type Canceler struct {
	Cancel context.CancelCauseFunc
	Stderr io.Writer
	Now    func() time.Time
	Window time.Duration
	Budget time.Duration
	// KillAll sends SIGKILL to every process of the run but those that
	// publish what exists, and returns the pids still alive.
	KillAll func() []int
	// KillEverything ends the publishing ones too, at the deadline.
	KillEverything func()
}

// New is the runner's Canceler: cancel gets the first signal as its
// cause (SignalError), the windows are the ones above, and the kills end
// the run's processes.
func New(cancel context.CancelCauseFunc, stderr io.Writer) *Canceler {
	return &Canceler{Cancel: cancel, Stderr: stderr, Now: time.Now, Window: RepeatWindow, Budget: SecondCancelBudget,
		KillAll: func() []int { return proc.KillAllVerified(KillVerifyTimeout) }, KillEverything: proc.KillEverything}
}

// SignalError is the cancel cause of a run stopped by a signal.
type SignalError struct{ Sig os.Signal }

func (e SignalError) Error() string { return "received " + e.Sig.String() }

// SignalNumber is the signal's number, for the 128+N exit status.
func SignalNumber(s os.Signal) int {
	if n, ok := s.(syscall.Signal); ok {
		return int(n)
	}
	return 1
}

// Wait returns the run's exit code from done, handling signals meanwhile.
// After a second cancel the run gets budget to publish; past it, the
// runner exits with 128+signal.
func (c *Canceler) Wait(sigs <-chan os.Signal, done <-chan int) int {
	var first time.Time
	var second os.Signal
	var deadline <-chan time.Time
	for {
		select {
		case code := <-done:
			return code
		case sig := <-sigs:
			now := c.Now()
			switch {
			case first.IsZero():
				first = now
				fmt.Fprintf(c.Stderr, "runner: %s: cancelling; the same signal within %s is the same cancel\n", sig, c.Window)
				c.Cancel(SignalError{sig})
			case second != nil:
			case now.Sub(first) < c.Window:
				fmt.Fprintf(c.Stderr, "runner: %s again %s after the first: the same cancel\n", sig, now.Sub(first).Round(time.Millisecond))
			default:
				second = sig
				fmt.Fprintf(c.Stderr, "runner: second cancel (%s): killing every process, then publishing what exists\n", sig)
				if left := c.KillAll(); len(left) > 0 {
					fmt.Fprintf(c.Stderr, "runner: processes still alive after SIGKILL: pids %v\n", left)
				}
				deadline = time.After(c.Budget)
			}
		case <-deadline:
			fmt.Fprintf(c.Stderr, "runner: cleanup still running %s after the second cancel; killing it and exiting\n", c.Budget)
			c.KillEverything()
			return 128 + SignalNumber(second)
		}
	}
}
