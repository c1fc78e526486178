package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// Environment knobs; the standins package documentation describes them.
const (
	envLog         = "FAKE_AGENT_LOG"
	envArtifacts   = "FAKE_AGENT_ARTIFACTS"
	envAnnotations = "FAKE_AGENT_ANNOTATIONS"
	envSecrets     = "FAKE_AGENT_SECRETS"
	envUploadDelay = "FAKE_AGENT_UPLOAD_DELAY"
)

const version = "3.137.0"

// agent carries the process's IO so tests can run commands in-process.
type agent struct {
	getenv  func(string) string
	environ []string
	stdin   io.Reader
	stdout  io.Writer
	stderr  io.Writer
	dir     string
}

// command is one subcommand: its flags and what it does.
type command struct {
	valueFlags []string
	boolFlags  []string
	// readsStdin reports whether the real agent would read stdin for these
	// parsed arguments.
	readsStdin func(f flags) bool
	run        func(a *agent, f flags, stdin string) error
}

// commands are the ones the runner runs; anything else exits 1 as an
// unknown command, so a new call shows up as a failing test.
var commands = map[string]command{
	"annotate":          annotateCommand,
	"artifact upload":   artifactUploadCommand,
	"artifact download": artifactDownloadCommand,
	"secret get":        secretGetCommand,
	"step get":          stepGetCommand,
}

func (a *agent) run(args []string) int {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-h" || args[0] == "help" {
		fmt.Fprintln(a.stdout, "Usage: buildkite-agent <command> [options...]")
		return 0
	}
	if args[0] == "--version" || args[0] == "-v" || args[0] == "version" {
		fmt.Fprintf(a.stdout, "buildkite-agent version %s, build fake\n", version)
		return 0
	}
	name, rest := args[0], args[1:]
	if _, ok := commands[name]; !ok && len(args) > 1 {
		name, rest = args[0]+" "+args[1], args[2:]
	}
	cmd, ok := commands[name]
	if !ok {
		a.record(args, "")
		fmt.Fprintf(a.stderr, "buildkite-agent: unknown command %q\n", strings.Join(args[:min(len(args), 2)], " "))
		return 1
	}
	f, err := parseFlags(rest, cmd.valueFlags, cmd.boolFlags)
	if err != nil {
		a.record(args, "")
		fmt.Fprintf(a.stderr, "Incorrect Usage: %v\n", err)
		return 1
	}
	stdin := ""
	if cmd.readsStdin != nil && cmd.readsStdin(f) && readable(a.stdin) {
		data, err := io.ReadAll(a.stdin)
		if err != nil {
			fmt.Fprintf(a.stderr, "fatal: reading stdin: %v\n", err)
			return 1
		}
		stdin = string(data)
	}
	if err := a.record(args, stdin); err != nil {
		fmt.Fprintf(a.stderr, "fatal: %v\n", err)
		return 1
	}
	if err := cmd.run(a, f, stdin); err != nil {
		fmt.Fprintf(a.stderr, "fatal: %v\n", err)
		return 1
	}
	return 0
}

// invocation is one line of the FAKE_AGENT_LOG file.
type invocation struct {
	Argv  []string          `json:"argv"`
	Stdin string            `json:"stdin"`
	Env   map[string]string `json:"env"`
}

// record appends the invocation to FAKE_AGENT_LOG, with every BUILDKITE_*
// variable except tokens.
func (a *agent) record(args []string, stdin string) error {
	path := a.getenv(envLog)
	if path == "" {
		return nil
	}
	env := map[string]string{}
	for _, kv := range a.environ {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "BUILDKITE_") && !strings.Contains(k, "TOKEN") {
			env[k] = v
		}
	}
	line, err := json.Marshal(invocation{Argv: append([]string{"buildkite-agent"}, args...), Stdin: stdin, Env: env})
	if err != nil {
		return fmt.Errorf("encode invocation: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", envLog, err)
	}
	// One write per line keeps concurrent invocations from interleaving.
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", envLog, err)
	}
	return f.Close()
}

// readable mirrors the agent's check: read stdin only when it is not a
// terminal.
func readable(r io.Reader) bool {
	if r == nil {
		return false
	}
	f, ok := r.(*os.File)
	if !ok {
		return true
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice == 0
}

// flags holds parsed options and positional arguments.
type flags struct {
	values map[string]string
	bools  map[string]bool
	args   []string
}

func (f flags) value(name, def string) string {
	if v, ok := f.values[name]; ok {
		return v
	}
	return def
}

// parseFlags accepts "--name value", "--name=value" and single-dash forms,
// anywhere on the line, as the agent's CLI does.
func parseFlags(args, valueFlags, boolFlags []string) (flags, error) {
	f := flags{values: map[string]string{}, bools: map[string]bool{}}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			f.args = append(f.args, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			f.args = append(f.args, arg)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		switch {
		case slices.Contains(boolFlags, name):
			f.bools[name] = !hasValue || value == "true" || value == "1"
		case slices.Contains(valueFlags, name):
			if !hasValue {
				if i+1 >= len(args) {
					return flags{}, fmt.Errorf("flag needs an argument: -%s", name)
				}
				i++
				value = args[i]
			}
			f.values[name] = value
		default:
			return flags{}, fmt.Errorf("flag provided but not defined: -%s", name)
		}
	}
	return f, nil
}

// errUnsupported reports a real option or form the runner never uses and
// the stand-in does not implement: failing beats silently ignoring it.
func errUnsupported(what string) error {
	return fmt.Errorf("%s is not supported by this stand-in", what)
}

func splitTrim(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
