package tools

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/proc/proctest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// realPython returns the absolute path of a python3 that can create a
// venv. Without one the test fails in CI and is skipped, loudly,
// elsewhere.
func realPython(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys, venv, ensurepip; print(sys.executable)").Output()
	if err != nil {
		testutil.Missing(t, "python3 with venv and ensurepip is needed to test the install for real: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// recorder is proc.Exec that keeps what it started.
type recorder struct {
	mu    sync.Mutex
	specs []proc.Spec
}

func (r *recorder) exec() proc.Exec {
	return proc.Exec{OnStart: func(s proc.Spec) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.specs = append(r.specs, proc.Spec{Argv: s.Argv, Env: s.Env})
	}}
}

func (r *recorder) take() []proc.Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.specs
	r.specs = nil
	return out
}

// wheelDir writes the stand-in wheels into a new directory.
func wheelDir(t *testing.T, wheels ...standIn) string {
	t.Helper()
	dir := t.TempDir()
	for _, w := range wheels {
		writeWheel(t, dir, w)
	}
	return dir
}

// allWheels are stand-ins for everything Pinned(true) installs.
func allWheels() []standIn {
	return append(apiDeps(), lmEvalStandIn(LMEval.Version), bfclStandIn(BFCLEval.Version), plainStandIn("soundfile", Soundfile.Version))
}

// standInSet is a tool set whose lock pins the stand-in wheels of dir
// by their sha256, as a real lock pins PyPI's.
func standInSet(t *testing.T, name string, pkgs []Package, dir string, wheels ...standIn) Set {
	t.Helper()
	var lock strings.Builder
	lock.WriteString("# a lock of stand-in wheels\n")
	for _, w := range wheels {
		data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s-%s-py3-none-any.whl", w.name, w.version)))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&lock, "%s==%s \\\n    --hash=sha256:%x\n", w.name, w.version, sha256.Sum256(data))
	}
	return Set{Name: name, Lock: []byte(lock.String()), Packages: pkgs}
}

// jobEnviron is a job environment whose pip may reach only wheels, and
// which holds tokens that pip must not see.
func jobEnviron(t *testing.T, wheels string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"PIP_NO_INDEX=1",
		"PIP_FIND_LINKS=" + wheels,
		"BUILDKITE_AGENT_ACCESS_TOKEN=bk-secret",
		"BENCHKITE_INGEST_TOKEN=ingest-secret",
		"HF_TOKEN=hf-secret",
		"PYTHONPATH=/must/not/reach/pip",
	}
}

var specOpts = cmpopts.IgnoreFields(proc.Spec{}, "Stdout", "Stderr", "Stdin")

func TestProvisionVenvInstallsThenReuses(t *testing.T) {
	t.Parallel()
	py := realPython(t)
	wheels := wheelDir(t, allWheels()...)
	environ := jobEnviron(t, wheels)
	// pip must read no configuration: a user config and a named one that
	// would send it to an index that does not exist are both ignored.
	home := strings.TrimPrefix(environ[1], "HOME=")
	badConf := "[global]\nindex-url = http://127.0.0.1:9/nowhere\nno-index = false\nfind-links =\n"
	if err := os.MkdirAll(filepath.Join(home, ".config", "pip"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{filepath.Join(home, ".config", "pip", "pip.conf"), filepath.Join(home, "named.conf")} {
		if err := os.WriteFile(f, []byte(badConf), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	environ = append(environ, "PIP_CONFIG_FILE="+filepath.Join(home, "named.conf"))
	set := standInSet(t, "lm-eval-bfcl", Pinned(true), wheels, allWheels()...)
	root := filepath.Join(t.TempDir(), "tools")
	req := Request{Dir: root, Set: set, Python: py, Environ: environ}
	var log bytes.Buffer
	req.Log = &log
	rec := &recorder{}
	ctx := context.Background()

	got, err := Provision(ctx, rec.exec(), req)
	if err != nil {
		t.Fatalf("Provision() error = %v\nlog:\n%s", err, log.String())
	}
	ran := rec.take()
	plan, err := Plan(req)
	if err != nil {
		t.Fatalf("Plan() error = %v", err)
	}
	if diff := cmp.Diff(ran, plan, specOpts); diff != "" {
		t.Errorf("Provision ran other commands than Plan shows; diff (-got +want):\n%s", diff)
	}
	for _, s := range ran {
		for _, kv := range s.Env {
			name, _, _ := strings.Cut(kv, "=")
			switch name {
			case "BUILDKITE_AGENT_ACCESS_TOKEN", "BENCHKITE_INGEST_TOKEN", "HF_TOKEN", "PYTHONPATH":
				t.Errorf("%s got %s", proc.FormatArgv(s.Argv[:2]), name)
			}
		}
		if !slices.Contains(s.Env, "PIP_CONFIG_FILE="+os.DevNull) {
			t.Errorf("%s env = %q, want PIP_CONFIG_FILE=%s", proc.FormatArgv(s.Argv[:2]), s.Env, os.DevNull)
		}
	}
	if !strings.Contains(strings.Join(plan[2].Env, "\n"), "PIP_FIND_LINKS="+wheels) {
		t.Errorf("pip env = %q, want PIP_FIND_LINKS passed through", plan[2].Env)
	}

	dir := filepath.Join(root, ".venvs", set.Key()+".1")
	want := Tools{
		Mode:   ModeVenv,
		Dir:    dir,
		Lock:   set.Key(),
		LMEval: filepath.Join(dir, "bin", "lm_eval"),
		Python: filepath.Join(dir, "bin", "python"),
		Env: []childenv.Var{
			{Name: "VIRTUAL_ENV", Value: dir},
			{Name: "PATH", Value: filepath.Join(dir, "bin") + ":" + os.Getenv("PATH")},
		},
		Versions: map[string]string{"lm-eval": LMEval.Version, "bfcl-eval": BFCLEval.Version, "soundfile": Soundfile.Version},
	}
	if diff := cmp.Diff(got, want, cmpopts.IgnoreFields(Tools{}, "Duration")); diff != "" {
		t.Errorf("Provision() diff (-got +want):\n%s", diff)
	}
	if !strings.Contains(log.String(), "tools: installed lm-eval 0.4.12, bfcl-eval 2026.3.23, soundfile 0.13.1 into "+dir+" in ") {
		t.Errorf("log lacks the install line:\n%s", log.String())
	}
	if target, err := os.Readlink(filepath.Join(root, set.Key())); err != nil || target != filepath.Join(".venvs", set.Key()+".1") {
		t.Errorf("readlink(%s) = %q, %v; want the venv", set.Key(), target, err)
	}

	// The console script runs, and the BFCL driver's python imports
	// bfcl_eval and soundfile.
	var out bytes.Buffer
	if err := (proc.Exec{}).Run(ctx, proc.Spec{Argv: []string{got.LMEval, "--tasks", "gsm8k"}, Stdout: &out, Stderr: &out}); err != nil {
		t.Fatalf("%s: %v\n%s", got.LMEval, err, out.String())
	}
	if g, w := out.String(), "lm_eval stand-in 0.4.12 --tasks gsm8k\n"; g != w {
		t.Errorf("lm_eval printed %q, want %q", g, w)
	}
	out.Reset()
	if err := (proc.Exec{}).Run(ctx, proc.Spec{Argv: []string{got.Python, "-c", "import bfcl_eval, soundfile"}, Stdout: &out, Stderr: &out}); err != nil {
		t.Errorf("%s cannot import bfcl_eval: %v\n%s", got.Python, err, out.String())
	}

	// Again: the venv holds the set, so only the check runs.
	log.Reset()
	again, err := Provision(ctx, rec.exec(), req)
	if err != nil {
		t.Fatalf("second Provision() error = %v\nlog:\n%s", err, log.String())
	}
	want.Reused = true
	if diff := cmp.Diff(again, want, cmpopts.IgnoreFields(Tools{}, "Duration")); diff != "" {
		t.Errorf("second Provision() diff (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(rec.take(), plan[3:], specOpts); diff != "" {
		t.Errorf("second Provision() ran more than the check; diff (-got +want):\n%s", diff)
	}
	if !strings.Contains(log.String(), "tools: reused "+dir) {
		t.Errorf("log lacks the reuse line:\n%s", log.String())
	}

	// A recipe without bfcl gets a venv of its own: the BFCL one, which a
	// running job may be using, is left as it is.
	lmWheels := append(apiDeps(), lmEvalStandIn(LMEval.Version))
	lmOnly := req
	lmOnly.Set = standInSet(t, "lm-eval", Pinned(false), wheels, lmWheels...)
	third, err := Provision(ctx, rec.exec(), lmOnly)
	if err != nil {
		t.Fatalf("Provision(lm-eval only) error = %v", err)
	}
	lmDir := filepath.Join(root, ".venvs", lmOnly.Set.Key()+".1")
	if third.Reused || third.Dir != lmDir || third.Python != "" || third.LMEval != filepath.Join(lmDir, "bin", "lm_eval") {
		t.Errorf("Provision(lm-eval only) = %+v, want a new venv %s with lm_eval and no python", third, lmDir)
	}
	if _, err := os.Stat(filepath.Join(dir, "lib")); err != nil {
		t.Errorf("the BFCL venv after the lm-eval install: %v", err)
	}
	if n := len(rec.take()); n != 4 {
		t.Errorf("Provision(lm-eval only) ran %d commands, want the 4 of an install", n)
	}
}

func TestProvisionConcurrentInstallsOnce(t *testing.T) {
	t.Parallel()
	py := realPython(t)
	wheels := append(apiDeps(), lmEvalStandIn(LMEval.Version))
	wdir := wheelDir(t, wheels...)
	req := Request{
		Dir:     filepath.Join(t.TempDir(), "tools"),
		Set:     standInSet(t, "lm-eval", Pinned(false), wdir, wheels...),
		Python:  py,
		Environ: jobEnviron(t, wdir),
	}
	const n = 3
	var wg sync.WaitGroup
	results := make([]Tools, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = Provision(context.Background(), proc.Exec{}, req)
		}()
	}
	wg.Wait()
	installs := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("Provision #%d error = %v", i, errs[i])
		}
		if !results[i].Reused {
			installs++
		}
		if results[i].Dir != results[0].Dir {
			t.Errorf("Provision #%d Dir = %s, want %s for all", i, results[i].Dir, results[0].Dir)
		}
	}
	if installs != 1 {
		t.Errorf("%d of %d concurrent Provisions installed, want 1 (the others reuse its venv)", installs, n)
	}
}

func TestProvisionReinstallsWhenLockChanges(t *testing.T) {
	t.Parallel()
	py := realPython(t)
	oldWheels := append(apiDeps(), lmEvalStandIn("0.4.11"))
	newWheels := append(apiDeps(), lmEvalStandIn(LMEval.Version))
	wheels := wheelDir(t, append(oldWheels, lmEvalStandIn(LMEval.Version))...)
	old := LMEval
	old.Version = "0.4.11"
	req := Request{
		Dir:     filepath.Join(t.TempDir(), "tools"),
		Set:     standInSet(t, "lm-eval", []Package{old}, wheels, oldWheels...),
		Python:  py,
		Environ: jobEnviron(t, wheels),
	}
	ctx := context.Background()
	first, err := Provision(ctx, proc.Exec{}, req)
	if err != nil {
		t.Fatalf("Provision(0.4.11) error = %v", err)
	}
	req.Set = standInSet(t, "lm-eval", Pinned(false), wheels, newWheels...)
	var log bytes.Buffer
	req.Log = &log
	got, err := Provision(ctx, proc.Exec{}, req)
	if err != nil {
		t.Fatalf("Provision(0.4.12) error = %v\n%s", err, log.String())
	}
	if got.Reused || got.Versions["lm-eval"] != "0.4.12" || got.Dir == first.Dir {
		t.Errorf("Provision(0.4.12) = %+v, want a new install of 0.4.12 beside %s", got, first.Dir)
	}
	if !strings.Contains(log.String(), "installing "+req.Set.Key()+": no earlier install") {
		t.Errorf("log does not say why the venv was not reused:\n%s", log.String())
	}
	// The old venv stays for a job that may still be running from it.
	if _, err := os.Stat(filepath.Join(first.Dir, markerName)); err != nil {
		t.Errorf("old venv: %v", err)
	}
}

func TestProvisionRejectsWrongHash(t *testing.T) {
	t.Parallel()
	py := realPython(t)
	wheels := append(apiDeps(), lmEvalStandIn(LMEval.Version))
	wdir := wheelDir(t, wheels...)
	set := standInSet(t, "lm-eval", Pinned(false), wdir, wheels...)
	// The lm_eval wheel on the index is not the one the lock pins.
	writeWheel(t, wdir, standIn{name: "lm_eval", version: LMEval.Version, modules: map[string]string{"lm_eval/__init__.py": "evil = 1\n"}})
	req := Request{Dir: filepath.Join(t.TempDir(), "tools"), Set: set, Python: py, Environ: jobEnviron(t, wdir)}
	_, err := Provision(context.Background(), proc.Exec{}, req)
	if err == nil || !strings.Contains(err.Error(), "THESE PACKAGES DO NOT MATCH THE HASHES") {
		t.Fatalf("Provision() error = %v, want pip's hash mismatch", err)
	}
	if _, err := os.Lstat(filepath.Join(req.Dir, set.Key())); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed install was published: lstat error = %v", err)
	}
	// The next try builds a new generation and removes the failed one.
	if gens, err := generations(req.Dir, set); err != nil || nextGeneration(gens) != 2 {
		t.Errorf("generations() = %v, %v; want the one failed build, the next generation 2", gens, err)
	}
	var log bytes.Buffer
	req.Log = &log
	if _, err := Provision(context.Background(), proc.Exec{}, req); err == nil {
		t.Fatal("the second Provision() succeeded with the wrong wheel")
	}
	failed := buildDir(req.Dir, set, 1)
	if _, err := os.Stat(failed); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the first failed build %s is still there: stat error = %v", failed, err)
	}
	if !strings.Contains(log.String(), "tools: removed "+failed+", a build that never completed") {
		t.Errorf("the log does not say the failed build was removed:\n%s", log.String())
	}
	if _, err := os.Stat(buildDir(req.Dir, set, 2)); err != nil {
		t.Errorf("the second try's build: %v", err)
	}
}

func TestProvisionMissingWheel(t *testing.T) {
	t.Parallel()
	py := realPython(t)
	// No bfcl-eval wheel: pip cannot find it.
	present := append(apiDeps(), lmEvalStandIn(LMEval.Version), plainStandIn("soundfile", Soundfile.Version))
	wheels := wheelDir(t, present...)
	all := wheelDir(t, allWheels()...)
	req := Request{
		Dir:     filepath.Join(t.TempDir(), "tools"),
		Set:     standInSet(t, "lm-eval-bfcl", Pinned(true), all, allWheels()...),
		Python:  py,
		Environ: jobEnviron(t, wheels),
	}
	_, err := Provision(context.Background(), proc.Exec{}, req)
	if err == nil {
		t.Fatal("Provision() error = nil, want pip's failure")
	}
	for _, w := range []string{
		"install lm-eval-bfcl (lock " + req.Set.Hash() + ")",
		"exited with code 1",
		"last lines:",
		"No matching distribution found for bfcl_eval==2026.3.23",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Provision() error = %q, want it to contain %q", err, w)
		}
	}
	var exit *proc.ExitError
	if !errors.As(err, &exit) {
		t.Errorf("Provision() error = %v, want a *proc.ExitError inside", err)
	}
	if _, err := os.Stat(filepath.Join(buildDir(req.Dir, req.Set, 1), markerName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("marker after a failed install: stat error = %v, want not exist", err)
	}
}

// noVenv is the real runner, except that the interpreter cannot create
// a venv: the check for it fails as it does where ensurepip is missing.
type noVenv struct {
	proc.Exec
}

func (n noVenv) Run(ctx context.Context, s proc.Spec) error {
	if len(s.Argv) == 3 && s.Argv[2] == venvSupport {
		return &proc.ExitError{Name: s.Argv[0], Code: 1}
	}
	return n.Exec.Run(ctx, s)
}

func TestProvisionUserFallback(t *testing.T) {
	t.Parallel()
	py := realPython(t)
	wheels := wheelDir(t, append(apiDeps(), lmEvalStandIn(LMEval.Version))...)
	environ := jobEnviron(t, wheels)
	home := strings.TrimPrefix(environ[1], "HOME=")
	var recorded []proc.Spec
	var mu sync.Mutex
	r := noVenv{proc.Exec{OnStart: func(s proc.Spec) {
		mu.Lock()
		defer mu.Unlock()
		recorded = append(recorded, s)
	}}}
	req := Request{
		Dir:     filepath.Join(t.TempDir(), "tools"),
		Set:     standInSet(t, "lm-eval", Pinned(false), wheels, append(apiDeps(), lmEvalStandIn(LMEval.Version))...),
		Python:  py,
		Environ: environ,
	}
	got, err := Provision(context.Background(), r, req)
	if err != nil {
		t.Fatalf("Provision() error = %v", err)
	}
	base := filepath.Join(home, ".local")
	want := Tools{
		Mode:     ModeUser,
		Dir:      base,
		Lock:     req.Set.Key(),
		LMEval:   filepath.Join(base, "bin", "lm_eval"),
		Env:      []childenv.Var{{Name: "PATH", Value: filepath.Join(base, "bin") + ":" + os.Getenv("PATH")}},
		Versions: map[string]string{"lm-eval": LMEval.Version},
	}
	if diff := cmp.Diff(got, want, cmpopts.IgnoreFields(Tools{}, "Duration")); diff != "" {
		t.Errorf("Provision() diff (-got +want):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(req.Dir, ".venvs")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a venv was created in user mode: stat error = %v", err)
	}
	var pipEnv []string
	for _, s := range recorded {
		if slices.Contains(s.Argv, "--user") {
			pipEnv = s.Env
		}
	}
	if !slices.Contains(pipEnv, "PIP_BREAK_SYSTEM_PACKAGES=1") {
		t.Errorf("pip install --user env = %q, want PIP_BREAK_SYSTEM_PACKAGES=1", pipEnv)
	}
}

func TestProvisionPath(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	for _, name := range []string{"lm_eval", "python3", "vllm"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "not-exec"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	tests := []struct {
		name    string
		req     Request
		want    Tools
		wantErr string
	}{
		{
			name: "everything found, PYTHONPATH as given",
			req:  Request{Mode: ModePath, Set: Locked(true), Environ: []string{"PATH=relative:" + empty + ":" + bin, "PYTHONPATH=/opt/tools"}},
			want: Tools{
				Mode: ModePath, LMEval: filepath.Join(bin, "lm_eval"), Python: filepath.Join(bin, "python3"), VLLM: filepath.Join(bin, "vllm"),
				Env: []childenv.Var{{Name: "PYTHONPATH", Value: "/opt/tools"}},
			},
		},
		{
			name: "no vllm on a docker host is fine",
			req:  Request{Mode: ModePath, Set: Locked(false), Environ: []string{"PATH=" + bin + "/../" + filepath.Base(bin)}},
			want: Tools{Mode: ModePath, LMEval: filepath.Join(bin, "..", filepath.Base(bin), "lm_eval"), VLLM: filepath.Join(bin, "..", filepath.Base(bin), "vllm")},
		},
		{
			name: "bench only needs no lm_eval",
			req:  Request{Mode: ModePath, Environ: []string{"PATH=" + empty}},
			want: Tools{Mode: ModePath},
		},
		{
			name:    "lm_eval missing",
			req:     Request{Mode: ModePath, Set: Locked(false), Environ: []string{"PATH=" + empty}},
			wantErr: "BENCHKITE_TOOLS=path: lm_eval not found on PATH",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := proctest.New(t) // path mode runs nothing
			got, err := Provision(context.Background(), f, tt.req)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Provision() error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Provision() error = %v", err)
			}
			for _, p := range []*string{&tt.want.LMEval, &tt.want.VLLM} {
				if *p != "" {
					*p = filepath.Clean(*p)
				}
			}
			if diff := cmp.Diff(got, tt.want, cmpopts.IgnoreFields(Tools{}, "Duration"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Provision() diff (-got +want):\n%s", diff)
			}
			plan, err := Plan(tt.req)
			if err != nil || plan != nil {
				t.Errorf("Plan() = %v, %v; want no commands", plan, err)
			}
		})
	}
}

func TestProvisionNothingAsked(t *testing.T) {
	t.Parallel()
	f := proctest.New(t) // a bench-only run starts no command
	got, err := Provision(context.Background(), f, Request{Dir: t.TempDir()})
	if err != nil || !cmp.Equal(got, Tools{}) {
		t.Errorf("Provision(no packages) = %+v, %v; want nothing", got, err)
	}
	if plan, err := Plan(Request{Dir: "x"}); plan != nil || err != nil {
		t.Errorf("Plan(no packages) = %v, %v; want nothing", plan, err)
	}
}

func TestRequirementAndPins(t *testing.T) {
	t.Parallel()
	tests := []struct {
		bfcl bool
		want []string
	}{
		{false, []string{"lm-eval[api]==0.4.12"}},
		{true, []string{"lm-eval[api]==0.4.12", "bfcl-eval==2026.3.23", "soundfile==0.13.1"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(requirements(Pinned(tt.bfcl)), tt.want); diff != "" {
			t.Errorf("requirements(Pinned(%t)) diff (-got +want):\n%s", tt.bfcl, diff)
		}
	}
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Mode
		wantErr bool
	}{
		{"", ModeVenv, false},
		{"venv", ModeVenv, false},
		{"path", ModePath, false},
		{"user", "", true},
		{"PATH", "", true},
	}
	for _, tt := range tests {
		got, err := ParseMode(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseMode(%q) = %q, %v; want %q, error %t", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	req := Request{
		Dir:     "/cache/tools",
		Set:     Locked(true),
		Environ: []string{"PATH=/usr/bin", "HOME=/root", "PIP_INDEX_URL=https://u:p@mirror/simple", "BUILDKITE_AGENT_ACCESS_TOKEN=x", "HF_TOKEN=y"},
	}
	plan, err := Plan(req)
	if err != nil {
		t.Fatalf("Plan() error = %v", err)
	}
	var got []string
	for _, s := range plan {
		got = append(got, proc.FormatArgv(s.Argv[:min(len(s.Argv), 12)]))
	}
	venv := "/cache/tools/.venvs/lm-eval-bfcl-" + Locked(true).Hash() + ".1"
	want := []string{
		"python3 -c 'import venv, ensurepip'",
		"python3 -m venv " + venv,
		venv + "/bin/python -m pip install --disable-pip-version-check --no-input --progress-bar off --require-hashes --no-deps -r " + venv + "/benchkite-lock.txt",
		proc.FormatArgv([]string{venv + "/bin/python", "-c", checkScript, "lm-eval==0.4.12", "bfcl-eval==2026.3.23", "soundfile==0.13.1"}),
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Plan() argv diff (-got +want):\n%s", diff)
	}
	wantEnv := []string{"HOME=/root", "PATH=/usr/bin", "PIP_CONFIG_FILE=/dev/null", "PIP_INDEX_URL=https://u:p@mirror/simple"}
	for _, s := range plan {
		if diff := cmp.Diff(s.Env, wantEnv); diff != "" {
			t.Errorf("Plan() env of %s diff (-got +want):\n%s", s.Argv[0], diff)
		}
	}
	if _, err := Plan(Request{Set: Locked(false)}); err == nil {
		t.Error("Plan(no Dir) error = nil, want one")
	}
}

// A venv that model code of an earlier job could write to is reused only
// as the install left it: a .pth dropped into site-packages (which every
// later python of the venv runs at start), a module changed, bytecode
// changed (RECORD lists it without a hash), a RECORD rewritten along with
// its file, or a file removed: each makes the next job build the venv
// again, and the new one runs none of it.
func TestProvisionRebuildsATamperedVenv(t *testing.T) {
	t.Parallel()
	py := realPython(t)
	lmWheels := append(apiDeps(), lmEvalStandIn(LMEval.Version))
	wheels := wheelDir(t, lmWheels...)
	req := Request{
		Dir:     filepath.Join(t.TempDir(), "tools"),
		Set:     standInSet(t, "lm-eval", Pinned(false), wheels, lmWheels...),
		Python:  py,
		Environ: jobEnviron(t, wheels),
	}
	ctx := context.Background()
	first, err := Provision(ctx, proc.Exec{}, req)
	if err != nil {
		t.Fatalf("Provision() error = %v", err)
	}
	sitePackages := func(t *testing.T, dir string) string {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(dir, "lib", "python*", "site-packages"))
		if err != nil || len(m) != 1 {
			t.Fatalf("site-packages of %s: %q, %v", dir, m, err)
		}
		return m[0]
	}
	runLMEval := func(t *testing.T, tl Tools) string {
		t.Helper()
		var out bytes.Buffer
		if err := (proc.Exec{}).Run(ctx, proc.Spec{Argv: []string{tl.LMEval, "--tasks", "gsm8k"}, Stdout: &out, Stderr: &out}); err != nil {
			t.Fatalf("%s: %v\n%s", tl.LMEval, err, out.String())
		}
		return out.String()
	}
	write := func(t *testing.T, path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const mark = "TAMPERED"
	tampers := []struct {
		name string
		do   func(t *testing.T, site string)
		why  string // what the log says of the old venv
	}{
		{"a .pth dropped into site-packages", func(t *testing.T, site string) {
			write(t, filepath.Join(site, "zz-poison.pth"), "import sys; print('"+mark+"', file=sys.stderr)\n")
		}, "zz-poison.pth is in no RECORD and was not there after the install"},
		{"a module changed", func(t *testing.T, site string) {
			p := filepath.Join(site, "lm_eval", "__main__.py")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			write(t, p, strings.Replace(string(data), "print(", "print('"+mark+"', ", 1))
		}, "lm_eval/__main__.py does not match its RECORD hash"},
		{"bytecode changed", func(t *testing.T, site string) {
			// Other code under the header of the source's own bytecode
			// (its mtime and size): python loads it as it is.
			pycs, _ := filepath.Glob(filepath.Join(site, "lm_eval", "__pycache__", "__main__.*.pyc"))
			if len(pycs) != 1 {
				t.Fatalf("pip compiled no lm_eval/__main__ bytecode: %q", pycs)
			}
			const forge = `import importlib._bootstrap_external as b, os, sys
src, pyc = sys.argv[1], sys.argv[2]
st = os.stat(src)
code = compile(open(src).read().replace("print(", "print('` + mark + `', ", 1), src, "exec")
open(pyc, "wb").write(b._code_to_timestamp_pyc(code, st.st_mtime, st.st_size))
`
			if out, err := exec.Command(py, "-c", forge, filepath.Join(site, "lm_eval", "__main__.py"), pycs[0]).CombinedOutput(); err != nil {
				t.Fatalf("forge bytecode: %v\n%s", err, out)
			}
		}, "__main__.cpython-"},
		{"a module and its RECORD line changed together", func(t *testing.T, site string) {
			p := filepath.Join(site, "lm_eval", "__main__.py")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			newData := strings.Replace(string(data), "print(", "print('"+mark+"', ", 1)
			write(t, p, newData)
			recs, _ := filepath.Glob(filepath.Join(site, "lm_eval-*.dist-info", "RECORD"))
			if len(recs) != 1 {
				t.Fatalf("lm_eval's RECORD: %q", recs)
			}
			rec, err := os.ReadFile(recs[0])
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256([]byte(newData))
			var lines []string
			for _, l := range strings.Split(string(rec), "\n") {
				if strings.HasPrefix(l, "lm_eval/__main__.py,") {
					l = fmt.Sprintf("lm_eval/__main__.py,sha256=%s,%d", base64.RawURLEncoding.EncodeToString(sum[:]), len(newData))
				}
				lines = append(lines, l)
			}
			write(t, recs[0], strings.Join(lines, "\n"))
		}, "RECORD changed since the install"},
		{"a file removed", func(t *testing.T, site string) {
			if err := os.Remove(filepath.Join(site, "lm_eval", "__init__.py")); err != nil {
				t.Fatal(err)
			}
		}, "lm_eval/__init__.py is gone"},
	}
	prev := first
	for i, tc := range tampers {
		t.Run(tc.name, func(t *testing.T) {
			tc.do(t, sitePackages(t, prev.Dir))
			if i != len(tampers)-1 && !strings.Contains(runLMEval(t, prev), mark) {
				t.Fatalf("the tampered venv does not run the change: the test would see nothing")
			}
			var log bytes.Buffer
			req.Log = &log
			got, err := Provision(ctx, proc.Exec{}, req)
			if err != nil {
				t.Fatalf("Provision() error = %v\n%s", err, log.String())
			}
			if got.Reused || got.Dir == prev.Dir {
				t.Fatalf("Provision() reused %s (Reused %v), want a new venv\n%s", got.Dir, got.Reused, log.String())
			}
			if !strings.Contains(log.String(), prev.Dir+" is not what the lock installed: ") || !strings.Contains(log.String(), tc.why) {
				t.Errorf("log does not say why %s was not reused (want %q):\n%s", prev.Dir, tc.why, log.String())
			}
			if out := runLMEval(t, got); strings.Contains(out, mark) {
				t.Errorf("the new venv runs the tampered code:\n%s", out)
			}
			prev = got
		})
	}
	// Untouched, the last one is reused.
	var log bytes.Buffer
	req.Log = &log
	again, err := Provision(ctx, proc.Exec{}, req)
	if err != nil || !again.Reused || again.Dir != prev.Dir {
		t.Errorf("Provision() of an untouched venv = %+v, %v; want %s reused\n%s", again, err, prev.Dir, log.String())
	}
	if !strings.Contains(log.String(), "files are what the lock installed") {
		t.Errorf("log does not say the venv was checked:\n%s", log.String())
	}
}
