package proc

import (
	"errors"
	"syscall"
)

// signalGroup sends sig to every process in the group pgid, and to the
// members of the session of that id that left the group. A group that is
// already gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		err = nil
	}
	if members, lerr := liveMembers(pgid); lerr == nil {
		for _, pid := range members {
			_ = syscall.Kill(pid, sig)
		}
	}
	return err
}

// groupAlive reports whether the group pgid has a member that is not a
// zombie. kill(2) alone also counts zombies, and those stay forever where
// PID 1 does not reap orphans (as in some containers).
func groupAlive(pgid int) bool {
	live, err := liveMembers(pgid)
	if err != nil {
		return true // cannot tell: assume the worst
	}
	return len(live) > 0
}
