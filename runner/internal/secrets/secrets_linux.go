package secrets

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// reexecs: on Linux the runner re-executes itself without its secrets.
const reexecs = true

// nonDumpable keeps other processes of the runner's uid from reading its
// memory (/proc/<pid>/mem, ptrace) and its /proc files; root still can.
func nonDumpable() error {
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_DUMPABLE, 0, 0); errno != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, 0): %w", errno)
	}
	return nil
}

// reexec replaces the process image with the runner's own executable,
// with clean as its environment and the secrets waiting in a pipe whose
// read end it inherits.
func reexec(argv, clean []string, data []byte) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("re-execute without secrets: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("re-execute without secrets: %w", err)
	}
	defer r.Close()
	if _, err := w.Write(data); err != nil {
		w.Close()
		return fmt.Errorf("re-execute without secrets: %w", err)
	}
	// The write end is closed before the exec: the new image reads to EOF.
	if err := w.Close(); err != nil {
		return fmt.Errorf("re-execute without secrets: %w", err)
	}
	fd := int(r.Fd())
	if _, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), syscall.F_SETFD, 0); errno != 0 {
		return fmt.Errorf("re-execute without secrets: fcntl: %w", errno)
	}
	env := append(clean, FDEnv+"="+strconv.Itoa(fd))
	err = syscall.Exec(exe, argv, env)
	return fmt.Errorf("re-execute %s without secrets: %w", exe, err)
}

// isPipe says whether fd is an open pipe, as the re-executing runner
// leaves its secrets on.
func isPipe(fd int) bool {
	var st syscall.Stat_t
	return syscall.Fstat(fd, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFIFO
}
