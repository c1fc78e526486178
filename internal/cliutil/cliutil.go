// Package cliutil holds what both commands' CLIs share: their IO streams,
// the one error type that carries an exit code, usage errors, flag parsing
// that lets flags follow operands, and flag defaults read from the
// environment.
//
// Only main turns an error into a process exit, through Exit.
package cliutil

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Streams are a command's standard output and error.
type Streams struct {
	Stdout io.Writer
	Stderr io.Writer
}

// ErrUsage marks a command line that does not parse; it exits 2.
var ErrUsage = errors.New("usage")

// ExitError carries a chosen exit status. With a nil or empty Err nothing
// more is printed: the command has said what went wrong.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return "exit " + strconv.Itoa(e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit is a silent ExitError: the command already printed why.
func Exit(code int) error { return &ExitError{Code: code} }

// ExitCode prints err (prefixed with the command) to stderr and returns
// the process exit status: 0 for nil and -h, the ExitError's code, 2 for
// usage errors, 1 for anything else.
func ExitCode(err error, prefix string, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil && ee.Err.Error() != "" {
			fmt.Fprintf(stderr, "%s: %v\n", prefix, ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintf(stderr, "%s: %v\n", prefix, err)
	if errors.Is(err, ErrUsage) {
		return 2
	}
	return 1
}

// NewFlagSet is a ContinueOnError flag set writing its messages to stderr.
func NewFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// NewCommandFlagSet is NewFlagSet for program's subcommand name, whose
// usage names its operands, says its summary and lists its flags.
func NewCommandFlagSet(program, name, operands, summary string, stderr io.Writer) *flag.FlagSet {
	fs := NewFlagSet(name, stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s %s [flags]\n\n%s\n\nFlags:\n", program, strings.TrimSpace(name+" "+operands), summary)
		fs.PrintDefaults()
	}
	return fs
}

// NoOperands is the usage error of a command that takes none.
func NoOperands(name string, operands []string) error {
	if len(operands) > 0 {
		return fmt.Errorf("%w: %s takes no arguments, got %q", ErrUsage, name, operands)
	}
	return nil
}

// ParseWithEnv is Parse, then env's values that did not parse: a command
// runs only when both its command line and its environment are sound.
func ParseWithEnv(fs *flag.FlagSet, env *Env, args []string) ([]string, error) {
	operands, err := Parse(fs, args)
	if err != nil {
		return nil, err
	}
	if err := env.Err(); err != nil {
		return nil, err
	}
	return operands, nil
}

// Parse parses flags wherever they stand, so "explain NAME --json" works
// like "explain --json NAME", and returns the operands; after "--"
// everything is an operand. A flag that does not parse exits 2 (the flag
// package has already said what is wrong).
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var operands []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, Exit(2)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return operands, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(operands, rest...), nil
		}
		operands = append(operands, rest[0])
		args = rest[1:]
	}
}

// Env reads flag defaults from the environment. A value that does not
// parse is recorded, not replaced by the default: a typo such as
// BENCHKITE_HEALTH_TIMEOUT=7200 must not pass unnoticed. Err returns what
// was recorded.
type Env struct {
	Getenv func(string) string
	errs   []error
}

// String is the variable's value, or def when it is unset or blank.
func (e *Env) String(name, def string) string {
	if v := e.Getenv(name); strings.TrimSpace(v) != "" {
		return v
	}
	return def
}

// Duration is the variable read as a time.Duration, or def.
func (e *Env) Duration(name string, def time.Duration) time.Duration {
	v := strings.TrimSpace(e.Getenv(name))
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("env %s: %w", name, err))
		return def
	}
	return d
}

// Int is the variable read as a whole number, or def.
func (e *Env) Int(name string, def int) int {
	v := strings.TrimSpace(e.Getenv(name))
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("env %s: %q is not a whole number", name, v))
		return def
	}
	return n
}

// Bool is the variable read as a boolean; unset is false.
func (e *Env) Bool(name string) bool {
	switch v := strings.ToLower(strings.TrimSpace(e.Getenv(name))); v {
	case "1", "true", "yes", "on":
		return true
	case "", "0", "false", "no", "off":
		return false
	default:
		e.errs = append(e.errs, fmt.Errorf("env %s: %q is not a boolean (1, true, yes, on or 0, false, no, off)", name, v))
		return false
	}
}

// Fail records a problem with a variable that the caller parsed itself.
func (e *Env) Fail(err error) { e.errs = append(e.errs, err) }

// Err is every value that did not parse, as a usage error, or nil.
func (e *Env) Err() error {
	if len(e.errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrUsage, errors.Join(e.errs...))
}
