package tools

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
)

// checkScript prints "name version" (or "name -") for each name==version
// argument and exits 1 unless every one is installed at that version.
const checkScript = `import sys
from importlib.metadata import version, PackageNotFoundError
bad = 0
for arg in sys.argv[1:]:
    name, want = arg.split("==")
    try:
        got = version(name)
    except PackageNotFoundError:
        got = None
    print(name, got or "-")
    if got != want:
        bad = 1
sys.exit(bad)
`

// venvSupport fails where the interpreter cannot create a venv with pip
// (Debian without python3-venv lacks ensurepip).
const venvSupport = "import venv, ensurepip"

// userBaseScript prints where pip install --user puts scripts, less /bin.
const userBaseScript = "import site; print(site.getuserbase())"

// pipFlags keep pip's output a log, not a terminal, and install exactly
// the lock: every distribution hashed, none resolved beyond it.
var pipFlags = []string{"--disable-pip-version-check", "--no-input", "--progress-bar", "off", "--require-hashes", "--no-deps"}

// PipFlags are the flags of every hashed install from a lock: quiet for a
// log, every distribution hashed, none resolved beyond the lock.
func PipFlags() []string { return append([]string(nil), pipFlags...) }

// NoPipConfig is the variable that keeps pip from reading any
// configuration file; the job's own PIP_* index settings still apply.
func NoPipConfig() childenv.Var { return noPipConfig }

// lockName is the lock file as written into the venv (or, for the user
// fallback, beside the venvs) for pip to read.
const lockName = "benchkite-lock.txt"

// noPipConfig makes pip read no configuration file at all: not
// ~/.config/pip/pip.conf, /etc/pip.conf or one a job names. pip still
// reads the job's index settings (PIP_INDEX_URL, ...) that childenv lets
// through.
var noPipConfig = childenv.Var{Name: "PIP_CONFIG_FILE", Value: os.DevNull}

// specs are the commands of one provisioning, built once so that Plan
// and Provision agree.
type specs struct {
	support, create, install, check, userInstall, userCheck, userBase proc.Spec
}

// newSpecs are the commands that build the venv dir from userLock (the
// lock file's path for the user fallback).
func newSpecs(req Request, dir, userLock string) (specs, error) {
	env, err := childenv.Build(childenv.Install, childenv.Options{Environ: req.Environ, Runner: []childenv.Var{noPipConfig}})
	if err != nil {
		return specs{}, err
	}
	userEnv, err := childenv.Build(childenv.Install, childenv.Options{
		Environ: req.Environ,
		Runner:  []childenv.Var{noPipConfig, {Name: "PIP_BREAK_SYSTEM_PACKAGES", Value: "1"}},
	})
	if err != nil {
		return specs{}, err
	}
	py := req.python()
	vpy := filepath.Join(dir, "bin", "python")
	pins := pinArgs(req.Set.Packages)
	return specs{
		support: proc.Spec{Argv: []string{py, "-c", venvSupport}, Env: env},
		create:  proc.Spec{Argv: []string{py, "-m", "venv", dir}, Env: env},
		install: proc.Spec{Argv: slices.Concat([]string{vpy, "-m", "pip", "install"}, pipFlags, []string{"-r", filepath.Join(dir, lockName)}), Env: env},
		check:   proc.Spec{Argv: slices.Concat([]string{vpy, "-c", checkScript}, pins), Env: env},
		userInstall: proc.Spec{
			Argv: slices.Concat([]string{py, "-m", "pip", "install", "--user"}, pipFlags, []string{"-r", userLock}),
			Env:  userEnv,
		},
		userCheck: proc.Spec{Argv: slices.Concat([]string{py, "-c", checkScript}, pins), Env: env},
		userBase:  proc.Spec{Argv: []string{py, "-c", userBaseScript}, Env: env},
	}, nil
}

// pinArgs are name==version for the check, without extras.
func pinArgs(pkgs []Package) []string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = p.Name + "==" + p.Version
	}
	return out
}
