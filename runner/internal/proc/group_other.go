//go:build !linux

package proc

import (
	"errors"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

// liveMembers cannot tell zombies apart without /proc; kill(2) has
// already said the group has members.
func liveMembers(pgid int) ([]int, error) {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return nil, nil
	}
	return []int{pgid}, nil
}

// sessionOutsiders needs /proc; elsewhere the group signal is all.
func sessionOutsiders(int) ([]int, error) { return nil, nil }

// BecomeSubreaper is Linux only; elsewhere orphans go to init.
func BecomeSubreaper() error { return nil }

// Descendants needs /proc; elsewhere it finds none.
func Descendants() []int { return nil }

func descendants(map[int]bool) []int { return nil }
