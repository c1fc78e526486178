// Package benchdriver holds the Python program that runs every bench run
// of a job through vLLM's bench entry point in one process, and the
// protocol the runner speaks with it. Each `vllm bench serve` process
// spends seconds importing Python, vLLM and torch before it sends a
// request; one process for the job spends them once.
package benchdriver

import (
	_ "embed"
	"encoding/json"
	"strconv"
	"strings"
)

// Source is the program, run as `python3 -c Source`.
//
//go:embed benchdriver.py
var Source string

// ExitNoEntryPoint is its exit status when the Python it runs on has no
// vllm.benchmarks.serve with add_cli_args and main: the runner then runs
// each bench as its own `vllm bench serve`.
const ExitNoEntryPoint = 3

// Mark starts each protocol line on its stdout.
const Mark = "benchkite-bench: "

// Event is one protocol line.
type Event struct {
	// Kind is "ready", "start" or "end".
	Kind string
	// RC is an end's exit status.
	RC int
}

// ParseLine reads a line of the driver's stdout (without its newline):
// an event, or ok false for output of the bench itself.
func ParseLine(line string) (Event, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r"), Mark)
	if !ok {
		return Event{}, false
	}
	switch {
	case rest == "ready", rest == "start":
		return Event{Kind: rest}, true
	case strings.HasPrefix(rest, "end rc="):
		rc, err := strconv.Atoi(strings.TrimPrefix(rest, "end rc="))
		if err != nil {
			return Event{}, false
		}
		return Event{Kind: "end", RC: rc}, true
	}
	return Event{}, false
}

// Request is the stdin line that asks for one run: its CLI argv, from
// "vllm" on, as JSON.
func Request(argv []string) ([]byte, error) {
	b, err := json.Marshal(argv)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
