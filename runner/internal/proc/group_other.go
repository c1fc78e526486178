//go:build !linux

package proc

import "syscall"

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// liveMembers cannot tell zombies apart without /proc; kill(2) has
// already said the group has members.
func liveMembers(pgid int) ([]int, error) {
	return []int{pgid}, nil
}
