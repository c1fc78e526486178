// Command docker is a stand-in for the docker CLI and its daemon on one
// machine without containers: "docker run -d" starts the image's
// entrypoint (the stand-in vllm's serve) as a detached process group, and
// logs, exec, stop, rm, ps and inspect act on it. Flags are parsed as the
// real CLI parses them (spf13/pflag with docker's own option types), so a
// flag or value the real docker rejects is rejected here with its message
// and exit status. See the standins package documentation for what is
// emulated and what is simplified.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/execlog"
)

func main() {
	execlog.Record()
	if os.Getenv(internalEnv) != "" {
		os.Exit(internal(os.Args[1:]))
	}
	// Like the real CLI: the first SIGINT or SIGTERM ends the command with
	// 128+signal; what it started in a container keeps running.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		os.Exit(128 + int(s.(syscall.Signal)))
	}()
	d := newDaemon(os.Getenv, os.Stdout, os.Stderr)
	d.stdin = os.Stdin
	os.Exit(d.main(os.Args[1:]))
}

// cliError is a failure with the message docker prints and its exit
// status.
type cliError struct {
	msg  string
	code int
}

func (e *cliError) Error() string { return e.msg }

// report prints err as docker does and returns the exit status.
func report(stderr io.Writer, err error) int {
	if err == nil {
		return 0
	}
	var ce *cliError
	if errors.As(err, &ce) {
		if ce.msg != "" {
			fmt.Fprintln(stderr, ce.msg)
		}
		return ce.code
	}
	fmt.Fprintln(stderr, err)
	return 1
}

// daemonErr is an error from the daemon, as a command other than run
// shows it.
func daemonErr(format string, a ...any) error {
	return &cliError{msg: "Error response from daemon: " + fmt.Sprintf(format, a...), code: 1}
}

// noSuchContainer is the daemon's not-found answer.
func noSuchContainer(ref string) error { return daemonErr("No such container: %s", ref) }
