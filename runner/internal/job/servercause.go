package job

import (
	"errors"
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// noteServerExit records and shows why a server that was ready ended on
// its own: a bench or lm_eval failure alone does not show the server's
// last words, and they hold the cause.
func (j *Job) noteServerExit() {
	why := "exited with code 0"
	if err := j.server.proc.Wait(); err != nil {
		why = err.Error()
	}
	if p := j.sum.Phase(summary.PhaseReady); p == nil || p.Status != summary.StatusOK {
		return // ready failed on the exit and showed the log already
	}
	j.serverExit = why
	fmt.Fprintf(j.log, "+++ :warning: the server exited during the run (%s); last %d lines of its log\n", why, serverLogTail)
	for _, line := range j.server.tail.Lines() {
		fmt.Fprintln(j.log, line)
	}
}

// serverCause is the server's last words as the cause of a failed phase,
// when the server ended on its own while the phase ran (a crash, an OOM,
// an exit): its end took the phase down. After teardown the server's end
// is the runner's own, and what fails then (a gate, a verdict on numbers
// already measured; publishing) is never the server's doing: "".
func (j *Job) serverCause() string {
	if j.tornDown || !j.serverGone() || j.server.tail == nil {
		return ""
	}
	return j.serverDeath()
}

// serverError is what the server printed about a failure: the innermost
// exception of its process that died first (the EngineCore's, not the
// API server's "See root cause above"), else its last error lines; never
// a warning. "" when it printed none.
func (j *Job) serverError() string {
	if e, ok := j.server.rootException(); ok {
		return e.String()
	}
	return j.server.tail.ErrorCause()
}

// serverDeath is why the server ended, for a server that has: what it
// printed about it (serverError), else how its process ended, naming the
// API server. A server killed by a signal (SIGKILL, the OOM killer)
// printed nothing about its end; what it printed before is no cause.
func (j *Job) serverDeath() string {
	s := j.server
	if e, ok := s.rootException(); ok {
		return e.String()
	}
	var exit *proc.ExitError
	err := s.proc.Wait()
	signaled := errors.As(err, &exit) && exit.Signal != 0
	if !signaled {
		if c := s.tail.ErrorCause(); c != "" {
			return c
		}
	}
	if s.container != "" {
		// `docker logs -f` ended with the container; its status says
		// nothing of the server's.
		return "the server's container " + s.container + " ended"
	}
	why := "exited with code 0"
	if err != nil {
		why = err.Error()
	}
	if exit != nil && s.causes != nil {
		if api := s.causes.Prefix("APIServer"); api != "" && strings.HasPrefix(why, exit.Name+" ") {
			why = exit.Name + " " + api + why[len(exit.Name):]
		}
	}
	return "the server died: " + why
}

// lastError is the last line of output that reports an error (docker ends
// a failure with a usage hint), else the last line.
func lastError(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(strings.ToLower(lines[i]), "error") {
			return lines[i]
		}
	}
	if len(lines) > 0 {
		return lines[len(lines)-1]
	}
	return ""
}
