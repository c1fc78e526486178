// Package execlog lets every stand-in record how it was started: its argv
// and its whole environment, one JSON line per start, appended to the file
// FAKE_EXEC_LOG names. The end-to-end tests read it to prove what the
// runner handed each child (no token where none belongs) and that
// `runner plan` lists exactly what `runner run` starts.
package execlog

import (
	"encoding/json"
	"os"
	"sort"
	"syscall"
)

// Env names the log file; unset, nothing is recorded.
const Env = "FAKE_EXEC_LOG"

// Entry is one start of a stand-in.
type Entry struct {
	Argv []string `json:"argv"`
	Env  []string `json:"env"`
}

// Record appends this process's start to the log. Lines are written with
// one O_APPEND write each, so concurrent stand-ins do not interleave.
func Record() {
	path := os.Getenv(Env)
	if path == "" {
		return
	}
	env := os.Environ()
	sort.Strings(env)
	line, err := json.Marshal(Entry{Argv: os.Args, Env: env})
	if err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
	_, _ = f.Write(append(line, '\n'))
}
