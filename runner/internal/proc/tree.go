package proc

import (
	"context"
	"sync"
	"syscall"
	"time"
)

// The groups Exec started and that have not been reaped, so that a second
// signal can end them all at once.
var (
	liveMu sync.Mutex
	live   = map[int]bool{}
)

func track(pid int) {
	liveMu.Lock()
	live[pid] = true
	liveMu.Unlock()
}

func untrack(pid int) {
	liveMu.Lock()
	delete(live, pid)
	liveMu.Unlock()
}

// KillAll sends SIGKILL, at once, to every process group and session Exec
// started that is still alive, and to every other descendant of the
// runner: what a second SIGTERM or SIGINT asks for.
func KillAll() {
	liveMu.Lock()
	pids := make([]int, 0, len(live))
	for pid := range live {
		pids = append(pids, pid)
	}
	liveMu.Unlock()
	for _, pid := range pids {
		_ = signalGroup(pid, syscall.SIGKILL)
	}
	for _, pid := range Descendants() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// KillAllVerified is KillAll repeated until the process table shows no
// live descendant of the runner, or timeout passes; it returns the pids
// still alive then. A process started while the first KillAll ran is
// caught by the next.
func KillAllVerified(timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		KillAll()
		left := Descendants()
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(descendantPoll)
	}
}

// descendantPoll is how often KillDescendants checks what is left.
const descendantPoll = 20 * time.Millisecond

// KillDescendants ends every live descendant of the runner: SIGTERM, then
// SIGKILL after grace or when ctx ends. With the runner a child subreaper
// (BecomeSubreaper), processes that left their group and session and lost
// their parent are still descendants, so none escapes. It returns the
// pids it found.
func KillDescendants(ctx context.Context, grace time.Duration) []int {
	found := Descendants()
	if len(found) == 0 {
		return nil
	}
	for _, pid := range found {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	tick := time.NewTicker(descendantPoll)
	defer tick.Stop()
	for len(Descendants()) > 0 {
		select {
		case <-tick.C:
			continue
		case <-deadline.C:
		case <-ctx.Done():
		}
		break
	}
	for _, pid := range Descendants() {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return found
}
