// Package confine starts the processes that run model code (the native
// server, the bench, lm_eval, the BFCL driver) where they cannot read a
// process that holds a token. `--trust-remote-code` runs code from a
// model's repository inside them, and the processes around them hold the
// job's tokens: buildkite-agent's bootstrap and the job's shell keep the
// whole job environment in /proc/<pid>/environ, and the runner keeps the
// tokens in memory. They all run as one uid, often root with
// CAP_SYS_PTRACE, so a child of the same uid could read them all.
//
// A confined process starts in a user namespace and a mount namespace of
// its own: root inside, mapped to the runner's uid outside. The kernel
// grants ptrace-mode access to another process (its environ, mem, fd,
// root and cwd links, process_vm_readv) across user namespaces only to a
// holder of CAP_SYS_PTRACE in the target's namespace, which nothing
// inside holds for a namespace above it, whatever capabilities the pod
// gave the runner. Inside its mount namespace the tools directory is
// read-only, so model code cannot write into the venvs later jobs run.
// Before the command runs, CAP_SYS_ADMIN leaves its bounding set and no
// new privileges may be gained: it cannot undo those mounts, and a user
// namespace it makes of its own gets them locked.
//
// The process keeps its pid, process group and session as the runner
// sees them (no PID namespace), so stopping, reaping and exit statuses
// are those of an unconfined child: runner/internal/proc starts it. It
// still sees the process list and command lines (the runner puts no
// token on a command line) and can signal processes of its uid.
package confine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// Policy is what a confined process may not change.
type Policy struct {
	// ReadOnly are directories mounted read-only in the process's view
	// (the tools directory); one that does not exist is left out.
	ReadOnly []string `json:"read_only,omitempty"`
}

// shimName is argv[0] of the runner's own executable started as the
// shim that sets up the namespaces and then execs the command.
const shimName = "benchkite-confine"

func init() {
	if len(os.Args) > 0 && os.Args[0] == shimName {
		os.Exit(shim(os.Args[1:]))
	}
}

// probePath in place of a command's path makes the shim end once the
// namespaces and mounts are made (Probe).
const probePath = "--probe"

// Probe makes what a confined process under p gets, and runs nothing in
// it: an error says the host cannot confine (StartError explains it).
// The job asks before it loads a model.
func Probe(ctx context.Context, p Policy) error {
	attr := &syscall.SysProcAttr{}
	exe, argv, err := Wrap(probePath, nil, p, attr)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Args, cmd.Env, cmd.SysProcAttr = argv, []string{}, attr
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return StartError(err)
	}
	if err := cmd.Wait(); err != nil {
		// The namespace was made but gives no capability inside (Ubuntu's
		// kernel.apparmor_restrict_unprivileged_userns does this).
		return fmt.Errorf("%w: %s (%v): %s", ErrUnavailable, bytes.TrimSpace(out.Bytes()), err, hint)
	}
	return nil
}

// hint is what to change where the kernel refuses.
const hint = "the processes that run model code start only in a user namespace of their own; " +
	"allow unprivileged user namespaces (user.max_user_namespaces > 0, kernel.unprivileged_userns_clone=1, " +
	"kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for the runner, a seccomp profile that permits clone(CLONE_NEWUSER)) " +
	"or run with --unconfined (BENCHKITE_UNCONFINED=1), which lets them read every process of the runner's uid"

// ErrUnavailable marks a host where user namespaces cannot be made.
var ErrUnavailable = errors.New("user namespaces are unavailable")

// StartError explains a failed start of a confined process: where the
// kernel refuses a user namespace, the message says so and what to do.
func StartError(err error) error {
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EACCES) {
		return fmt.Errorf("%w (%w): %s", ErrUnavailable, err, hint)
	}
	return err
}

// shim runs inside the new namespaces as root of its user namespace:
// args are the policy, the command's path and its argv.
func shim(args []string) int {
	probe := len(args) == 2 && args[1] == probePath
	if len(args) < 3 && !probe {
		fmt.Fprintf(os.Stderr, "%s: want a policy, a path and an argv\n", shimName)
		return 126
	}
	var p Policy
	if err := json.Unmarshal([]byte(args[0]), &p); err != nil {
		fmt.Fprintf(os.Stderr, "%s: policy: %v\n", shimName, err)
		return 126
	}
	if err := setup(p); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", shimName, err)
		return 126
	}
	if probe {
		return 0
	}
	err := syscall.Exec(args[1], args[2:], os.Environ())
	fmt.Fprintf(os.Stderr, "%s: exec %s: %v\n", shimName, args[1], err)
	return 127
}
