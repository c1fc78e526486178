package proc

import (
	"fmt"
	"syscall"
)

// ExitError reports a command that ended unsuccessfully.
type ExitError struct {
	// Name is argv[0].
	Name string
	// Code is the exit status, or -1 when a signal killed the command.
	Code int
	// Signal is the signal that killed the command, or 0.
	Signal syscall.Signal
	// Err is why the runner stopped the command (the context's cause),
	// or nil when it ended on its own.
	Err error
}

func (e *ExitError) Error() string {
	var msg string
	if e.Signal != 0 {
		msg = fmt.Sprintf("%s killed by signal %d (%s)", e.Name, int(e.Signal), e.Signal)
	} else {
		msg = fmt.Sprintf("%s exited with code %d", e.Name, e.Code)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap gives errors.Is access to the stop cause, e.g. context.Canceled.
func (e *ExitError) Unwrap() error { return e.Err }
