package proc

import (
	"errors"
	"syscall"
)

// signalGroup sends sig to every process in the group pgid, and to the
// members of the session of that id that left the group: each process
// once, since a server may read a second SIGTERM as "exit now". A group
// that is already gone is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		err = nil
	}
	if others, lerr := sessionOutsiders(pgid); lerr == nil {
		for _, pid := range others {
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
