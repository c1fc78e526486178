package proc

import (
	"context"
	"sync"
	"syscall"
	"time"
)

// The groups Exec started and that have not been reaped, so that a second
// signal can end them all at once; spared ones publish what exists and
// are left to finish (Spec.Spare).
var (
	liveMu sync.Mutex
	live   = map[int]bool{} // pid: spared
	// spawnMu is held while a child starts and is tracked, and while
	// KillAll looks at the process table: a child is either tracked
	// (and so known to be spared) or not started yet.
	spawnMu sync.Mutex
)

func track(pid int, spare bool) {
	liveMu.Lock()
	live[pid] = spare
	liveMu.Unlock()
}

func untrack(pid int) {
	liveMu.Lock()
	delete(live, pid)
	liveMu.Unlock()
}

// KillAll sends SIGKILL, at once, to every process group and session Exec
// started that is still alive, and to every other descendant of the
// runner, except the spared processes and what runs below them: what a
// second SIGTERM or SIGINT asks for. It returns the spared pids.
func KillAll() []int {
	return killAll(false)
}

// KillEverything is KillAll without sparing anything: the last resort
// when even publishing has run out of time.
func KillEverything() {
	killAll(true)
}

func killAll(everything bool) []int {
	spawnMu.Lock()
	defer spawnMu.Unlock()
	liveMu.Lock()
	var pids, spared []int
	skip := map[int]bool{}
	for pid, spare := range live {
		if spare && !everything {
			spared = append(spared, pid)
			skip[pid] = true
			continue
		}
		pids = append(pids, pid)
	}
	liveMu.Unlock()
	for _, pid := range pids {
		_ = signalGroup(pid, syscall.SIGKILL)
	}
	for _, pid := range descendants(skip) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return spared
}

// KillAllVerified is KillAll repeated until the process table shows no
// live descendant of the runner but the spared ones, or timeout passes;
// it returns the pids still alive then. A process started while the
// first KillAll ran is caught by the next, unless it is spared.
func KillAllVerified(timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		spared := KillAll()
		skip := map[int]bool{}
		for _, pid := range spared {
			skip[pid] = true
		}
		left := descendants(skip)
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
