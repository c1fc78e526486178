package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// repeatWindow: signals this soon after the first are the same cancel
// delivered twice. GNU timeout sends SIGTERM to the runner and then to its
// process group; tini, forwarding shell wrappers and the agent plus the
// kubelet do the same. Read as a second cancel, the copy would cut the
// server's grace period and the upload short.
const repeatWindow = 2 * time.Second

// secondCancelBudget bounds the cleanup after a real second cancel: every
// process is already killed but an artifact upload or annotation in
// flight, which is left to finish; only removing a container, the summary
// and the upload are left.
const secondCancelBudget = 5 * time.Second

// killVerifyTimeout bounds the wait, after SIGKILL, for the process table
// to show no process of the run.
const killVerifyTimeout = 2 * time.Second

// canceler turns the signals a job receives into one cancel, and a real
// second one into killing every process before the run publishes what
// exists.
type canceler struct {
	cancel context.CancelCauseFunc
	stderr io.Writer
	now    func() time.Time
	window time.Duration
	budget time.Duration
	// killAll sends SIGKILL to every process of the run but those that
	// publish what exists, and returns the pids still alive.
	killAll func() []int
	// killEverything ends the publishing ones too, at the deadline.
	killEverything func()
}

// wait returns the run's exit code from done, handling signals meanwhile.
// After a second cancel the run gets budget to publish; past it, the
// runner exits with 128+signal.
func (c *canceler) wait(sigs <-chan os.Signal, done <-chan int) int {
	var first time.Time
	var second os.Signal
	var deadline <-chan time.Time
	for {
		select {
		case code := <-done:
			return code
		case sig := <-sigs:
			now := c.now()
			switch {
			case first.IsZero():
				first = now
				c.cancel(signalError{sig})
			case second != nil:
			case now.Sub(first) < c.window:
				fmt.Fprintf(c.stderr, "runner: %s again %s after the first: the same cancel\n", sig, now.Sub(first).Round(time.Millisecond))
			default:
				second = sig
				fmt.Fprintf(c.stderr, "runner: second cancel (%s): killing every process, then publishing what exists\n", sig)
				if left := c.killAll(); len(left) > 0 {
					fmt.Fprintf(c.stderr, "runner: processes still alive after SIGKILL: pids %v\n", left)
				}
				deadline = time.After(c.budget)
			}
		case <-deadline:
			fmt.Fprintf(c.stderr, "runner: cleanup still running %s after the second cancel; killing it and exiting\n", c.budget)
			c.killEverything()
			return 128 + signalNumber(second)
		}
	}
}
