package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
)

// pipTail is how many lines of pip's output a failed install quotes.
const pipTail = 20

// Request says what to provision.
type Request struct {
	// Mode is ModeVenv (the default when empty) or ModePath.
	Mode Mode
	// Dir holds the venvs, one per tool set, each named by the set's
	// name and lock hash (Set.Key); it is created when missing. Jobs of
	// one machine share it: a lock file in it serialises installs.
	Dir string
	// Set is the locked tool set (Locked). An empty one means nothing to
	// provision: a bench-only run.
	Set Set
	// Python is the interpreter that creates the venv; "python3" when
	// empty, looked up in the PATH of Environ.
	Python string
	// Environ is the job's environment. pip gets only what
	// childenv.Install allows of it.
	Environ []string
	// Log receives progress lines and pip's output; nil discards them.
	Log io.Writer
	// Now is the clock for Duration; time.Now when nil.
	Now func() time.Time
}

func (r Request) python() string {
	if r.Python == "" {
		return "python3"
	}
	return r.Python
}

// Tools is what Provision found or installed.
type Tools struct {
	// Mode is how the tools were found: ModeVenv, ModeUser or ModePath.
	Mode Mode
	// Dir is the venv (ModeVenv) or the user base (ModeUser).
	Dir string
	// LMEval is the path of lm_eval; empty when it was not asked for.
	LMEval string
	// Python is the interpreter that imports bfcl_eval, for the BFCL
	// driver; empty when bfcl-eval was not asked for.
	Python string
	// VLLM is vllm as found on PATH (ModePath only; empty when absent:
	// on docker hosts vllm is in the image, not on the host).
	VLLM string
	// Env is what lm_eval and the BFCL driver need on top of their
	// childenv role, as childenv.Options.Runner: the venv's PATH, or the
	// job's PYTHONPATH in ModePath.
	Env []childenv.Var
	// Lock is the tool set's key, name-hash (Set.Key); empty in ModePath.
	Lock string
	// Versions are the installed versions by distribution name, as the
	// interpreter reports them (empty in ModePath).
	Versions map[string]string
	// Reused is true when the venv already had the pinned versions and
	// nothing was installed.
	Reused bool
	// Duration is the time provisioning took, install included.
	Duration time.Duration
}

// Plan returns the commands Provision runs on a machine that has no
// venv of the set yet, in order: check that Python can create a venv,
// create it, pip install the lock, check the versions. A venv that
// already holds the set is only checked (the last command). Plan runs
// nothing.
func Plan(req Request) ([]proc.Spec, error) {
	if req.Mode == ModePath || req.Set.empty() {
		return nil, nil
	}
	if req.Mode != "" && req.Mode != ModeVenv {
		return nil, fmt.Errorf("plan tools: mode %q cannot be asked for", req.Mode)
	}
	root, err := venvDir(req.Dir)
	if err != nil {
		return nil, err
	}
	s, err := newSpecs(req, buildDir(root, req.Set, 1), userLockPath(root, req.Set))
	if err != nil {
		return nil, fmt.Errorf("plan tools: %w", err)
	}
	return []proc.Spec{s.support, s.create, s.install, s.check}, nil
}

// Provision makes the tools of req available, installing them when
// needed, and says where they are.
func Provision(ctx context.Context, r proc.Runner, req Request) (Tools, error) {
	now := req.Now
	if now == nil {
		now = time.Now
	}
	log := req.Log
	if log == nil {
		log = io.Discard
	}
	start := now()
	var t Tools
	var err error
	switch {
	case req.Mode == ModePath:
		t, err = fromPath(req)
	case req.Set.empty():
		return Tools{}, nil
	case req.Mode == "" || req.Mode == ModeVenv:
		t, err = provisionLocked(ctx, r, req, log)
	default:
		err = fmt.Errorf("mode %q cannot be asked for", req.Mode)
	}
	if err != nil {
		return Tools{}, fmt.Errorf("provision tools: %w", err)
	}
	t.Duration = now().Sub(start)
	switch {
	case t.Mode == ModePath:
		fmt.Fprintf(log, "tools: from PATH: lm_eval %s, python3 %s, vllm %s\n", orNone(t.LMEval), orNone(t.Python), orNone(t.VLLM))
	case t.Reused:
		fmt.Fprintf(log, "tools: reused %s (%s) in %s\n", t.Dir, versionList(req.Set.Packages, t.Versions), t.Duration.Round(time.Millisecond))
	default:
		fmt.Fprintf(log, "tools: installed %s into %s in %s\n", versionList(req.Set.Packages, t.Versions), t.Dir, t.Duration.Round(time.Millisecond))
	}
	return t, nil
}

// provisionLocked holds the tools directory's lock while it looks at or
// builds the set's venv: two jobs on one machine install one at a time,
// and the second finds the first's venv.
func provisionLocked(ctx context.Context, r proc.Runner, req Request, log io.Writer) (Tools, error) {
	root, err := venvDir(req.Dir)
	if err != nil {
		return Tools{}, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Tools{}, fmt.Errorf("tools directory: %w", err)
	}
	unlock, err := lockDir(ctx, root, log)
	if err != nil {
		return Tools{}, err
	}
	defer unlock()
	return provisionVenv(ctx, r, req, root, log)
}

func provisionVenv(ctx context.Context, r proc.Runner, req Request, root string, log io.Writer) (Tools, error) {
	link := filepath.Join(root, req.Set.Key())
	if dir, why, n := current(link, req.Set); why != "" {
		fmt.Fprintf(log, "tools: installing %s: %s\n", req.Set.Key(), why)
	} else {
		fmt.Fprintf(log, "tools: %s: all %d files are what the lock installed\n", dir, n)
		s, err := newSpecs(req, dir, "")
		if err != nil {
			return Tools{}, err
		}
		versions, out, err := check(ctx, r, s.check)
		if err == nil {
			t := Tools{Mode: ModeVenv, Dir: dir, Lock: req.Set.Key(), Reused: true, Versions: versions}
			return venvTools(t, req)
		}
		fmt.Fprintf(log, "tools: installing %s: %s does not hold the pins: %v\n%s", req.Set.Key(), dir, err, out)
	}

	gens, err := generations(root, req.Set)
	if err != nil {
		return Tools{}, err
	}
	gen := nextGeneration(gens)
	if err := removeFailed(gens, log); err != nil {
		return Tools{}, err
	}
	dir := buildDir(root, req.Set, gen)
	s, err := newSpecs(req, dir, userLockPath(root, req.Set))
	if err != nil {
		return Tools{}, err
	}
	if err := r.Run(ctx, quiet(s.support)); err != nil {
		var exit *proc.ExitError
		if !errors.As(err, &exit) || ctx.Err() != nil {
			return Tools{}, fmt.Errorf("check that %s can create a venv: %w", s.support.Name(), err)
		}
		fmt.Fprintf(log, "tools: %s cannot create a venv (%v); installing with pip install --user\n", s.support.Name(), err)
		if err := os.WriteFile(userLockPath(root, req.Set), req.Set.Lock, 0o644); err != nil {
			return Tools{}, fmt.Errorf("write the lock for pip: %w", err)
		}
		return provisionUser(ctx, r, req, s, log)
	}
	// A build that fails leaves its directory behind, out of the way: the
	// next try takes the next generation and removes it.
	fmt.Fprintf(log, "$ %s\n", proc.FormatArgv(s.create.Argv))
	if err := runLogged(ctx, r, s.create, log, "[venv] "); err != nil {
		return Tools{}, fmt.Errorf("create venv %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, lockName), req.Set.Lock, 0o644); err != nil {
		return Tools{}, fmt.Errorf("write the lock for pip: %w", err)
	}
	fmt.Fprintf(log, "$ %s\n", proc.FormatArgv(s.install.Argv))
	if err := runLogged(ctx, r, s.install, log, "[pip] "); err != nil {
		return Tools{}, fmt.Errorf("install %s (lock %s): %w", req.Set.Name, req.Set.Hash(), err)
	}
	versions, out, err := check(ctx, r, s.check)
	if err != nil {
		return Tools{}, fmt.Errorf("pip installed, but the venv does not hold the pins: %w\n%s", err, out)
	}
	t := Tools{Mode: ModeVenv, Dir: dir, Lock: req.Set.Key(), Versions: versions}
	t, err = venvTools(t, req)
	if err != nil {
		return Tools{}, err
	}
	if err := writeMarker(dir, req.Set); err != nil {
		return Tools{}, err
	}
	if err := publish(link, dir); err != nil {
		return Tools{}, err
	}
	return t, nil
}

func venvTools(t Tools, req Request) (Tools, error) {
	bin := filepath.Join(t.Dir, "bin")
	var err error
	if t.LMEval, err = lmEvalIn(bin, req); err != nil {
		return Tools{}, err
	}
	if hasPackage(req.Set.Packages, BFCLEval.Name) {
		t.Python = filepath.Join(bin, "python")
	}
	t.Env = []childenv.Var{
		{Name: "VIRTUAL_ENV", Value: t.Dir},
		{Name: "PATH", Value: prependPath(bin, envValue(req.Environ, "PATH"))},
	}
	return t, nil
}

// lmEvalIn is the lm_eval executable in bin when req installs lm_eval,
// else "".
func lmEvalIn(bin string, req Request) (string, error) {
	if !hasPackage(req.Set.Packages, LMEval.Name) {
		return "", nil
	}
	path := filepath.Join(bin, "lm_eval")
	if err := executable(path); err != nil {
		return "", err
	}
	return path, nil
}

func provisionUser(ctx context.Context, r proc.Runner, req Request, s specs, log io.Writer) (Tools, error) {
	fmt.Fprintf(log, "$ %s\n", proc.FormatArgv(s.userInstall.Argv))
	if err := runLogged(ctx, r, s.userInstall, log, "[pip] "); err != nil {
		return Tools{}, fmt.Errorf("install %s: %w", strings.Join(requirements(req.Set.Packages), " "), err)
	}
	versions, out, err := check(ctx, r, s.userCheck)
	if err != nil {
		return Tools{}, fmt.Errorf("pip installed, but %s does not import the pins: %w\n%s", s.userCheck.Name(), err, out)
	}
	var base bytes.Buffer
	sp := s.userBase
	sp.Stdout = &base
	if err := r.Run(ctx, sp); err != nil {
		return Tools{}, fmt.Errorf("find the user base of %s: %w", sp.Name(), err)
	}
	t := Tools{Mode: ModeUser, Dir: strings.TrimSpace(base.String()), Lock: req.Set.Key(), Versions: versions}
	if !filepath.IsAbs(t.Dir) {
		return Tools{}, fmt.Errorf("user base of %s is %q, not an absolute path", sp.Name(), t.Dir)
	}
	bin := filepath.Join(t.Dir, "bin")
	if t.LMEval, err = lmEvalIn(bin, req); err != nil {
		return Tools{}, err
	}
	if hasPackage(req.Set.Packages, BFCLEval.Name) {
		t.Python = req.python()
	}
	t.Env = []childenv.Var{{Name: "PATH", Value: prependPath(bin, envValue(req.Environ, "PATH"))}}
	return t, nil
}

// fromPath finds the tools on the job's PATH.
func fromPath(req Request) (Tools, error) {
	path := envValue(req.Environ, "PATH")
	t := Tools{Mode: ModePath}
	var err error
	if hasPackage(req.Set.Packages, LMEval.Name) {
		if t.LMEval, err = lookPath("lm_eval", path); err != nil {
			return Tools{}, err
		}
	}
	if hasPackage(req.Set.Packages, BFCLEval.Name) {
		if t.Python, err = lookPath("python3", path); err != nil {
			return Tools{}, err
		}
	}
	t.VLLM, _ = lookPath("vllm", path)
	if pp, ok := proc.LookupEnv(req.Environ, "PYTHONPATH"); ok {
		t.Env = []childenv.Var{{Name: "PYTHONPATH", Value: pp}}
	}
	return t, nil
}

// check runs the version check and parses its "name version" lines.
func check(ctx context.Context, r proc.Runner, s proc.Spec) (map[string]string, string, error) {
	var out bytes.Buffer
	s.Stdout, s.Stderr = &out, &out
	err := r.Run(ctx, s)
	versions := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && v != "-" {
			versions[name] = v
		}
	}
	return versions, out.String(), err
}

// runLogged runs s with its output in log, prefixed, and quotes the last
// lines of it in the error.
func runLogged(ctx context.Context, r proc.Runner, s proc.Spec, log io.Writer, prefix string) error {
	pw := proc.NewPrefixWriter(log, prefix)
	tail := proc.NewTail(pipTail)
	out := io.MultiWriter(pw, tail)
	s.Stdout, s.Stderr = out, out
	err := r.Run(ctx, s)
	pw.Close()
	if err != nil {
		if last := tail.String(); last != "" {
			return fmt.Errorf("%w; last lines:\n%s", err, last)
		}
		return err
	}
	return nil
}

func quiet(s proc.Spec) proc.Spec {
	s.Stdout, s.Stderr = io.Discard, io.Discard
	return s
}

func venvDir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("no venv directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("venv directory %s: %w", dir, err)
	}
	return abs, nil
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("pip installed, but %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}

// lookPath finds name in path as a child with that PATH would.
func lookPath(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("BENCHKITE_TOOLS=path: %s not found on PATH %q", name, path)
}

func prependPath(dir, path string) string {
	if path == "" {
		return dir
	}
	return dir + string(filepath.ListSeparator) + path
}

func envValue(env []string, key string) string {
	v, _ := proc.LookupEnv(env, key)
	return v
}

func versionList(pkgs []Package, versions map[string]string) string {
	parts := make([]string, len(pkgs))
	for i, p := range pkgs {
		v := versions[p.Name]
		if v == "" {
			v = "?"
		}
		parts[i] = p.Name + " " + v
	}
	return strings.Join(parts, ", ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Expect is what Provision will return for req when it succeeds, without
// running anything: the paths and environment `runner plan` shows.
func Expect(req Request) (Tools, error) {
	var err error
	switch {
	case req.Set.empty() && req.Mode != ModePath:
		return Tools{}, nil
	case req.Mode == ModePath:
		// As Provision finds them, when they are there already.
		t := Tools{Mode: ModePath}
		path := envValue(req.Environ, "PATH")
		if hasPackage(req.Set.Packages, LMEval.Name) {
			if t.LMEval, err = lookPath("lm_eval", path); err != nil {
				t.LMEval = "lm_eval"
			}
		}
		if hasPackage(req.Set.Packages, BFCLEval.Name) {
			if t.Python, err = lookPath("python3", path); err != nil {
				t.Python = "python3"
			}
		}
		if pp, ok := proc.LookupEnv(req.Environ, "PYTHONPATH"); ok {
			t.Env = []childenv.Var{{Name: "PYTHONPATH", Value: pp}}
		}
		return t, nil
	}
	root, err := venvDir(req.Dir)
	if err != nil {
		return Tools{}, err
	}
	dir := filepath.Join(root, req.Set.Key())
	t := Tools{Mode: ModeVenv, Dir: dir, Lock: req.Set.Key()}
	bin := filepath.Join(dir, "bin")
	if hasPackage(req.Set.Packages, LMEval.Name) {
		t.LMEval = filepath.Join(bin, "lm_eval")
	}
	if hasPackage(req.Set.Packages, BFCLEval.Name) {
		t.Python = filepath.Join(bin, "python")
	}
	t.Env = []childenv.Var{
		{Name: "VIRTUAL_ENV", Value: dir},
		{Name: "PATH", Value: prependPath(bin, envValue(req.Environ, "PATH"))},
	}
	return t, nil
}
