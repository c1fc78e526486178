package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr {
	// Pdeathsig kills the child should the runner itself be killed
	// (e.g. SIGKILL after Buildkite's cancel grace period), when no
	// cleanup of ours can run.
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// liveMembers lists the pids in group pgid that are not zombies.
func liveMembers(pgid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var live []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited meanwhile
		}
		// "pid (comm) state ppid pgrp ...": comm may hold spaces and ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if pg, err := strconv.Atoi(f[2]); err == nil && pg == pgid {
			live = append(live, pid)
		}
	}
	return live, nil
}
