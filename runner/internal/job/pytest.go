package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/toollocks"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/tools"
)

// The CUDA nightlies need pytest in the server's Python: torch.compile
// imports cupy's testing helpers, which fail without it. The images do
// not have it, so before the engine starts the runner asks the server's
// Python to import it and, when it cannot, installs the pinned pytest
// from its hashed lock (internal/toollocks/pytest.txt).

// pytestProbe prints "pytest VERSION" when `import pytest` works, else
// "pytest - WHY"; then "dist NAME VERSION" (VERSION "-" when absent) for
// every distribution named as an argument.
var pytestProbe = importProbe("pytest", "pytest.__version__")

// importProbe is a Python program printing "MODULE VERSION" when module
// imports (VERSION is what versionExpr gives), else "MODULE - WHY"; then
// "dist NAME VERSION" (VERSION "-" when absent) for every distribution
// named as an argument. One parser reads every such answer.
func importProbe(module, versionExpr string) string {
	return fmt.Sprintf(`import sys
from importlib.metadata import version, PackageNotFoundError
try:
    import %[1]s
    print("%[1]s", %[2]s)
except Exception as e:
    print("%[1]s -", type(e).__name__ + ":", " ".join(str(e).split()))
for name in sys.argv[1:]:
    try:
        print("dist", name, version(name))
    except PackageNotFoundError:
        print("dist", name, "-")
`, module, versionExpr)
}

// pytestTimeout bounds the step, the install included.
const pytestTimeout = 10 * time.Minute

// startGate holds a container's first process until the runner has done
// the pytest step in it: it waits for the file $1, then becomes the
// server (the rest of its arguments, never parsed by the shell). A
// SIGTERM ends the wait (the shell is the container's PID 1, which
// ignores signals it has no handler for), and the wait is bounded past
// pytestTimeout.
const startGate = `f=$1; shift
trap 'exit 143' TERM INT
i=0
while [ ! -e "$f" ]; do
  i=$((i+1))
  if [ "$i" -gt 9000 ]; then echo "benchkite: the runner did not start the server within 15 minutes" >&2; exit 124; fi
  sleep 0.1
done
rm -f "$f"
exec "$@"`

// startGateArgv0 is $0 of the gate script, the name sh reports errors
// under.
const startGateArgv0 = "benchkite-start"

// startGateFile is the file that opens a container's gate: unique per
// job, as the container's name is.
func startGateFile(container string) string { return "/tmp/" + container + ".start" }

// pytestSpecs are the step's commands: the probe, the install (its lock
// on stdin, given at run time) and, in a container, the command that
// opens its start gate. python is the interpreter as the summary names it.
type pytestSpecs struct {
	python  string
	probe   proc.Spec
	install proc.Spec
	release *proc.Spec
}

func (j *Job) pytestSpecs() (pytestSpecs, error) {
	names := lockNames(parseLock(toollocks.Pytest().Text))
	pip := append([]string{"-m", "pip", "install"}, tools.PipFlags()...)
	pip = append(pip, "-r", "/dev/stdin")
	// Installing into the image's own Python is the point here: a
	// system Python marked externally managed must not refuse it.
	fixed := []childenv.Var{tools.NoPipConfig(), {Name: "PIP_BREAK_SYSTEM_PACKAGES", Value: "1"}}
	if j.res.Profile.Runtime != agents.Docker {
		// The server's import path: what the job gives vLLM.
		vars := fixed
		for _, name := range []string{"PYTHONPATH", "LD_LIBRARY_PATH"} {
			if v, ok := proc.LookupEnv(j.environ, name); ok {
				vars = append(vars, childenv.Var{Name: name, Value: v})
			}
		}
		env, err := j.env(childenv.Install, vars...)
		if err != nil {
			return pytestSpecs{}, err
		}
		py := j.serverPython()
		return pytestSpecs{
			python:  py,
			probe:   proc.Spec{Argv: append([]string{py, "-c", pytestProbe}, names...), Env: env},
			install: proc.Spec{Argv: append([]string{py}, pip...), Env: env},
		}, nil
	}
	name := containerName(j.res, j.getenv)
	env, err := j.env(childenv.Docker)
	if err != nil {
		return pytestSpecs{}, err
	}
	install, err := j.containerPip(name)
	if err != nil {
		return pytestSpecs{}, err
	}
	return pytestSpecs{
		python:  "docker exec " + name + " python3",
		probe:   proc.Spec{Argv: append([]string{"docker", "exec", name, "python3", "-c", pytestProbe}, names...), Env: env},
		install: install,
		release: &proc.Spec{Argv: []string{"docker", "exec", name, "touch", startGateFile(name)}, Env: env},
	}, nil
}

// containerPip is `pip install` of a lock given on stdin into the
// container's python3, as the pytest step installs pytest: hashes
// required, no configuration file, the job's pip settings passed into the
// container by name (an index URL may hold a password, which must be on
// no command line).
func (j *Job) containerPip(name string) (proc.Spec, error) {
	pip := append([]string{"-m", "pip", "install"}, tools.PipFlags()...)
	pip = append(pip, "-r", "/dev/stdin")
	fixed := []childenv.Var{tools.NoPipConfig(), {Name: "PIP_BREAK_SYSTEM_PACKAGES", Value: "1"}}
	install := []string{"docker", "exec", "-i"}
	var passed []childenv.Var
	for _, v := range fixed {
		install = append(install, "-e", v.Name+"="+v.Value)
	}
	jobPip, err := childenv.Build(childenv.Install, childenv.Options{Environ: j.environ})
	if err != nil {
		return proc.Spec{}, err
	}
	for _, kv := range jobPip {
		if k, v, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "PIP_") && k != "PIP_CONFIG_FILE" {
			install = append(install, "-e", k)
			passed = append(passed, childenv.Var{Name: k, Value: v})
		}
	}
	installEnv, err := j.env(childenv.Docker, passed...)
	if err != nil {
		return proc.Spec{}, err
	}
	return proc.Spec{Argv: append(append(install, name, "python3"), pip...), Env: installEnv}, nil
}

// serverPython is the interpreter `vllm serve` runs on natively: the
// one its script's "#!" line names, else python3 from the server's PATH.
func (j *Job) serverPython() string {
	env, err := j.env(childenv.Server)
	if err == nil {
		path, _ := proc.LookupEnv(env, "PATH")
		for _, dir := range filepath.SplitList(path) {
			vllm := filepath.Join(dir, "vllm")
			if !filepath.IsAbs(dir) || !executableFile(vllm) {
				continue
			}
			// The vllm that runs: a Python script names its interpreter;
			// a binary, or "#!/usr/bin/env python3", leaves it to PATH.
			if interp := scriptInterpreter(vllm); strings.HasPrefix(filepath.Base(interp), "python") {
				return interp
			}
			break
		}
	}
	return "python3"
}

func executableFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// pytestState is what the probe found.
type pytestState struct {
	version string            // pytest's, when it imports
	why     string            // why it does not
	dists   map[string]string // distribution: version, "" when absent
}

func (j *Job) probePytest(ctx context.Context, s proc.Spec) (pytestState, error) {
	return j.probeTool(ctx, s, "pytest")
}

// probeTool runs a probe that answers as pytestProbe does, its first
// line's word head.
func (j *Job) probeTool(ctx context.Context, s proc.Spec, head string) (pytestState, error) {
	var out strings.Builder
	tail := proc.NewTail(pipTail)
	s.Stdout, s.Stderr = &out, tail
	if err := j.procs.Run(ctx, s); err != nil {
		j.noteCause(tail)
		if last := tail.String(); last != "" {
			return pytestState{}, fmt.Errorf("%w; last lines:\n%s", err, last)
		}
		return pytestState{}, err
	}
	st := pytestState{dists: map[string]string{}}
	seen := false
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 2 && f[0] == head:
			seen = true
			if f[1] != "-" {
				st.version = f[1]
			} else {
				st.why = strings.Join(f[2:], " ")
			}
		case len(f) == 3 && f[0] == "dist":
			if f[2] != "-" {
				st.dists[f[1]] = f[2]
			}
		}
	}
	if !seen {
		return pytestState{}, fmt.Errorf("%s printed no answer: %q", s.Name(), strings.TrimSpace(out.String()))
	}
	return st, nil
}

// pipTail is how many lines of pip's output a failed install quotes.
const pipTail = 20

// lacking is the entries of a lock whose distribution the probed Python
// does not have at any version.
func (st pytestState) lacking(entries []lockEntry) []lockEntry {
	var missing []lockEntry
	for _, e := range entries {
		if st.dists[e.name] == "" {
			missing = append(missing, e)
		}
	}
	return missing
}

// installFromLock runs install, a pip reading requirements on its stdin,
// with the lock's entries given, its output logged; a failure keeps pip's
// last lines as the cause, and names the lock's tool and python.
func (j *Job) installFromLock(ctx context.Context, install proc.Spec, entries []lockEntry, python string, lock toollocks.Lock) error {
	install.Stdin = strings.NewReader(lockText(entries))
	fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(install.Argv))
	pw := proc.NewPrefixWriter(j.log, "[pip] ")
	tail := proc.NewTail(pipTail)
	install.Stdout = io.MultiWriter(pw, tail)
	install.Stderr = install.Stdout
	err := j.procs.Run(ctx, install)
	pw.Close()
	if err != nil {
		j.noteCause(tail)
		return fmt.Errorf("%s: install into %s (lock %s): %w; last lines:\n%s", lock.Name, python, lock.Key(), err, tail.String())
	}
	return nil
}

// serverPytest is the pytest step: nothing when the server's Python
// imports pytest, else the lock's distributions it lacks are installed.
// Distributions it has at other versions are left as they are: they are
// the server's. A failure is the run's error, naming the cause.
func (j *Job) serverPytest(ctx context.Context, ps pytestSpecs) error {
	ctx, cancel := context.WithTimeout(ctx, pytestTimeout)
	defer cancel()
	start := j.now()
	lock := toollocks.Pytest()
	fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(ps.probe.Argv))
	st, err := j.probePytest(ctx, ps.probe)
	if err != nil {
		return fmt.Errorf("pytest: ask %s: %w", ps.python, err)
	}
	rec := &summary.ServerPytest{Python: ps.python, Action: summary.PytestSkipped, Version: st.version}
	if st.version != "" {
		fmt.Fprintf(j.log, "runner: pytest %s imports in %s; nothing installed\n", st.version, ps.python)
	} else {
		missing := st.lacking(parseLock(lock.Text))
		if len(missing) == 0 {
			return fmt.Errorf("pytest: %s cannot import pytest (%s), yet it has every distribution of the lock; nothing to install", ps.python, st.why)
		}
		fmt.Fprintf(j.log, "runner: pytest does not import in %s (%s); installing %s from its lock (%s)\n", ps.python, st.why, strings.Join(lockNames(missing), ", "), lock.Key())
		if err := j.installFromLock(ctx, ps.install, missing, ps.python, lock); err != nil {
			return err
		}
		after, err := j.probePytest(ctx, ps.probe)
		if err != nil {
			return fmt.Errorf("pytest: ask %s after the install: %w", ps.python, err)
		}
		if after.version == "" {
			return fmt.Errorf("pytest: pip installed it, but %s still cannot import pytest: %s", ps.python, after.why)
		}
		rec.Action, rec.Version = summary.PytestInstalled, after.version
		for _, e := range missing {
			if v := after.dists[e.name]; v != "" {
				rec.Installed = append(rec.Installed, e.name+"=="+v)
			}
		}
		fmt.Fprintf(j.log, "runner: installed %s into %s in %s\n", strings.Join(rec.Installed, ", "), ps.python, j.now().Sub(start).Round(time.Millisecond))
	}
	rec.DurationSeconds = j.now().Sub(start).Seconds()
	j.sum.ServerPytest = rec
	return nil
}

// lockEntry is one distribution of a lock file: its requirement line
// with its hashes and comments.
type lockEntry struct {
	name string
	text string
}

// parseLock splits a pip-compile lock into its entries: a requirement
// starts at the margin, its hash lines and comments are indented.
func parseLock(text []byte) []lockEntry {
	var out []lockEntry
	for _, line := range strings.Split(string(text), "\n") {
		switch {
		case strings.TrimSpace(line) == "":
		case line[0] == ' ' || line[0] == '\t':
			if len(out) > 0 {
				out[len(out)-1].text += line + "\n"
			}
		case line[0] == '#':
		default:
			name := line
			if i := strings.IndexAny(line, "=<>!~;[ \\"); i >= 0 {
				name = line[:i]
			}
			out = append(out, lockEntry{name: name, text: line + "\n"})
		}
	}
	return out
}

func lockNames(entries []lockEntry) []string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.name
	}
	return names
}

func lockText(entries []lockEntry) string {
	var b strings.Builder
	for _, e := range entries {
		b.WriteString(e.text)
	}
	return b.String()
}
