package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr {
	// A new session (and with it a new process group, both with the
	// child's pid as id): a grandchild that leaves the group stays in the
	// session and is ended with it. Pdeathsig kills the child should the
	// runner itself be killed (e.g. SIGKILL after Buildkite's cancel grace
	// period), when no cleanup of ours can run.
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
}

// liveMembers lists the pids in group or session pgid that are not
// zombies.
func liveMembers(pgid int) ([]int, error) {
	return liveWhere(func(st stat) bool { return st.pgrp == pgid || st.session == pgid })
}

// sessionOutsiders lists the live members of session sid that are not in
// the process group of the same id: what kill(-sid) does not reach.
func sessionOutsiders(sid int) ([]int, error) {
	return liveWhere(func(st stat) bool { return st.session == sid && st.pgrp != sid })
}

// liveWhere lists the pids of the processes that are not zombies and
// whose stat keep holds for.
func liveWhere(keep func(stat) bool) ([]int, error) {
	var out []int
	err := eachProcess(func(pid int, st stat) {
		if !st.zombie && keep(st) {
			out = append(out, pid)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachProcess hands every process in /proc, with its stat, to each; one
// that exits meanwhile is passed over.
func eachProcess(each func(pid int, st stat)) error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := statOf(pid); ok {
			each(pid, st)
		}
	}
	return nil
}

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER of prctl(2).
const prSetChildSubreaper = 36

// BecomeSubreaper makes the runner a child subreaper: a process whose
// parent dies while it runs is re-parented to the runner rather than to
// PID 1, so that vLLM's engine processes stay the runner's descendants
// and KillDescendants finds them.
func BecomeSubreaper() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_CHILD_SUBREAPER): %w", errno)
	}
	return nil
}

// Descendants lists the runner's live (not zombie) descendants.
func Descendants() []int { return descendants(nil) }

// descendants lists them, leaving out the processes skip names and
// everything below them.
func descendants(skip map[int]bool) []int {
	children := map[int][]int{}
	zombies := map[int]bool{}
	err := eachProcess(func(pid int, st stat) {
		children[st.ppid] = append(children[st.ppid], pid)
		if st.zombie {
			zombies[pid] = true
		}
	})
	if err != nil {
		return nil
	}
	// A zombie not yet reaped (a server just killed) still parents its
	// children: walk through it, list only the living.
	var out []int
	queue := []int{os.Getpid()}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if skip[c] {
				continue
			}
			if !zombies[c] {
				out = append(out, c)
			}
			queue = append(queue, c)
		}
	}
	return out
}

type stat struct {
	ppid, pgrp, session int
	zombie              bool
}

// statOf reads the fields of /proc/<pid>/stat the package needs.
func statOf(pid int) (stat, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false // exited meanwhile
	}
	// "pid (comm) state ppid pgrp session ...": comm may hold spaces and ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return stat{}, false
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 4 {
		return stat{}, false
	}
	var s stat
	s.zombie = f[0] == "Z" || f[0] == "X"
	s.ppid, _ = strconv.Atoi(f[1])
	s.pgrp, _ = strconv.Atoi(f[2])
	s.session, _ = strconv.Atoi(f[3])
	return s, true
}
