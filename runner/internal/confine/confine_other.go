//go:build !linux

package confine

import (
	"fmt"
	"syscall"
)

// Wrap cannot confine anything off Linux.
func Wrap(path string, argv []string, p Policy, attr *syscall.SysProcAttr) (string, []string, error) {
	return "", nil, fmt.Errorf("confine %s: %w off Linux", path, ErrUnavailable)
}

func setup(Policy) error { return ErrUnavailable }
