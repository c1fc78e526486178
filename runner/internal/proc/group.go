package proc

import (
	"errors"
	"syscall"
)

// signalGroup sends sig to every process in the group pgid. A group that
// is already gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// groupAlive reports whether the group pgid has a member that is not a
// zombie. kill(2) alone also counts zombies, and those stay forever where
// PID 1 does not reap orphans (as in some containers).
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	live, err := liveMembers(pgid)
	if err != nil {
		return true // cannot tell: assume the worst
	}
	return len(live) > 0
}
