package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// killBound bounds the wait for a killed container's supervisor to record
// its end.
const killBound = 10 * time.Second

// signals docker accepts by name for --signal.
var signalNames = map[string]syscall.Signal{
	"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "QUIT": syscall.SIGQUIT, "KILL": syscall.SIGKILL,
	"USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2, "TERM": syscall.SIGTERM, "STOP": syscall.SIGSTOP,
	"CONT": syscall.SIGCONT, "ABRT": syscall.SIGABRT, "ALRM": syscall.SIGALRM,
}

func parseSignal(s string) (syscall.Signal, error) {
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 || n > 64 {
			return 0, fmt.Errorf("Invalid signal: %s", s)
		}
		return syscall.Signal(n), nil
	}
	if sig, ok := signalNames[strings.TrimPrefix(strings.ToUpper(s), "SIG")]; ok {
		return sig, nil
	}
	return 0, fmt.Errorf("Invalid signal: %s", s)
}

// stop is `docker stop [OPTIONS] CONTAINER...`: the stop signal to the
// container's first process only, then, after the timeout, SIGKILL to
// every process in it.
func (d *daemon) stop(args []string) error {
	c := newCommand("stop", "stop [OPTIONS] CONTAINER [CONTAINER...]", true, 1, -1, d.stderr)
	f := c.flags
	sigName := f.StringP("signal", "s", "", "")
	timeout := f.IntP("timeout", "t", 0, "")
	f.IntVar(timeout, "time", 0, "")
	_ = f.MarkDeprecated("time", "use --timeout instead")
	c.support("signal", "timeout", "time")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	if f.Changed("timeout") && f.Changed("time") {
		return &cliError{msg: "conflicting options: cannot specify both --timeout and --time", code: 1}
	}
	st, err := d.store()
	if err != nil {
		return err
	}
	sig := syscall.SIGTERM
	if *sigName != "" {
		if sig, err = parseSignal(*sigName); err != nil {
			return daemonErr("%v", err)
		}
	}
	var errs []error
	for _, ref := range pos {
		ctr, err := st.find(ref)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		wait := time.Duration(ctr.StopTimeout) * time.Second
		if f.Changed("timeout") || f.Changed("time") {
			wait = time.Duration(*timeout) * time.Second
		}
		if s := st.status(ctr.ID); s.Running {
			_ = syscall.Kill(s.Pid, sig)
			// A negative timeout waits for ever.
			if *timeout < 0 && (f.Changed("timeout") || f.Changed("time")) {
				wait = 100 * 365 * 24 * time.Hour
			}
			if !st.waitEnded(ctr.ID, wait) {
				_ = syscall.Kill(-s.Pid, syscall.SIGKILL)
			}
			if !st.waitEnded(ctr.ID, killBound) {
				errs = append(errs, daemonErr("cannot stop container: %s: tried to kill container, but did not receive an exit event", ref))
				continue
			}
		}
		fmt.Fprintln(d.stdout, ref)
	}
	return joined(errs)
}

// joined is how docker reports several failures: one line each, status 1.
func joined(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	var lines []string
	for _, e := range errs {
		lines = append(lines, e.Error())
	}
	return &cliError{msg: strings.Join(lines, "\n"), code: 1}
}

// rm is `docker rm [OPTIONS] CONTAINER...`; with -f a running container is
// killed first and a missing one is no error.
func (d *daemon) rm(args []string) error {
	c := newCommand("rm", "rm [OPTIONS] CONTAINER [CONTAINER...]", true, 1, -1, d.stderr)
	f := c.flags
	f.BoolP("volumes", "v", false, "")
	f.BoolP("link", "l", false, "")
	force := f.BoolP("force", "f", false, "")
	c.support("volumes", "force")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	st, err := d.store()
	if err != nil {
		return err
	}
	var errs []error
	for _, ref := range pos {
		ref := strings.Trim(ref, "/")
		if ref == "" {
			errs = append(errs, errors.New("container name cannot be empty"))
			continue
		}
		ctr, err := st.find(ref)
		if err != nil {
			var ce *cliError
			if *force && errors.As(err, &ce) && strings.Contains(ce.msg, "No such container") {
				continue
			}
			errs = append(errs, err)
			continue
		}
		if s := st.status(ctr.ID); s.Running {
			if !*force {
				errs = append(errs, daemonErr("cannot remove container \"/%s\": container is running: stop the container before removing or force remove", ctr.Name))
				continue
			}
			_ = syscall.Kill(-s.Pid, syscall.SIGKILL)
			if !st.waitEnded(ctr.ID, killBound) {
				errs = append(errs, daemonErr("cannot remove container \"/%s\": could not kill container", ctr.Name))
				continue
			}
		}
		st.remove(ctr.ID)
		fmt.Fprintln(d.stdout, ref)
	}
	return joined(errs)
}
