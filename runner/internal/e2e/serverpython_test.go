package e2e

// The Python the stand-in server runs on. The runner asks the interpreter
// its `vllm` script names (natively) or the image's python3 (docker)
// whether it imports pytest, and installs the pinned one when it does
// not. The tests give it a real Python: a venv with a stand-in pytest
// module by default (the step finds it and installs nothing), or a fresh
// venv without pytest, into which the runner installs the real locked
// wheels, from a folder of them downloaded once per machine.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/toollocks"
)

// imagePathEnv is the docker stand-in's knob for the directories the
// image has first on its PATH: its Python.
const imagePathEnv = "FAKE_DOCKER_IMAGE_PATH"

// standInPytest is the version the stand-in pytest module reports.
const standInPytest = "0+e2e.standin"

// standInAIPerf is the version of the image's stand-in aiperf distribution.
const standInAIPerf = "0.13.0"

// serverPython is one Python for the server: bin holds a `vllm` script
// whose "#!" line names it (and that execs the stand-in vllm), venvBin
// its python3, for a container's PATH.
type serverPython struct {
	bin     string
	venvBin string
}

var (
	serverPyOnce sync.Once
	serverPyDir  string
	serverPy     serverPython
	serverPyErr  error
)

// defaultServerPython is the shared venv with a stand-in pytest, made
// once per test binary.
func defaultServerPython(t testing.TB, fakes string) serverPython {
	t.Helper()
	serverPyOnce.Do(func() {
		serverPyDir, serverPyErr = os.MkdirTemp("", "benchkite-e2e-python-")
		if serverPyErr != nil {
			return
		}
		serverPy, serverPyErr = makeServerPython(serverPyDir, fakes, true)
	})
	if serverPyErr != nil {
		t.Fatalf("the server's Python: %v", serverPyErr)
	}
	return serverPy
}

// withoutPytest gives the run's server a fresh Python that cannot import
// pytest, and pip the wheels of the folder wheels only (pytestWheels for
// the locked ones).
func (e *e2e) withoutPytest(wheels string) {
	e.t.Helper()
	py, err := makeServerPython(e.t.TempDir(), e.fakes, false)
	if err != nil {
		e.t.Fatalf("the server's Python: %v", err)
	}
	path := e.env["PATH"]
	_, rest, _ := strings.Cut(path, string(os.PathListSeparator))
	e.setenv("PATH", py.bin+string(os.PathListSeparator)+rest, imagePathEnv, py.venvBin,
		"PIP_FIND_LINKS", wheels, "PIP_NO_INDEX", "1")
}

// makeServerPython makes a venv under dir: without pip but with a
// stand-in pytest module, or with pip and no pytest.
func makeServerPython(dir, fakes string, withPytest bool) (serverPython, error) {
	venv := filepath.Join(dir, "venv")
	if withPytest {
		args := []string{"-m", "venv", "--without-pip", venv}
		if out, err := pythonCmd("python3", args...).CombinedOutput(); err != nil {
			return serverPython{}, fmt.Errorf("python3 %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	} else {
		// A venv with pip takes tens of seconds on a loaded machine; each
		// test copies one made once. `python -m pip` does not mind the
		// move (only the pip script's "#!" line names the first place).
		tmpl, err := pipVenv()
		if err != nil {
			return serverPython{}, err
		}
		if out, err := exec.Command("cp", "-a", tmpl, venv).CombinedOutput(); err != nil {
			return serverPython{}, fmt.Errorf("copy the venv: %w\n%s", err, out)
		}
	}
	py := filepath.Join(venv, "bin", "python")
	if withPytest {
		out, err := pythonCmd(py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").Output()
		if err != nil {
			return serverPython{}, fmt.Errorf("find the venv's site-packages: %w", err)
		}
		pkg := filepath.Join(strings.TrimSpace(string(out)), "pytest")
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			return serverPython{}, err
		}
		if err := os.WriteFile(filepath.Join(pkg, "__init__.py"), []byte(fmt.Sprintf("__version__ = %q\n", standInPytest)), 0o644); err != nil {
			return serverPython{}, err
		}
		// An image with aiperf: a module that imports and a distribution
		// that names its version (the aiperf command is the stand-in's).
		site := strings.TrimSpace(string(out))
		for file, text := range map[string]string{
			"aiperf/__init__.py":                              "",
			"aiperf-" + standInAIPerf + ".dist-info/METADATA": "Metadata-Version: 2.1\nName: aiperf\nVersion: " + standInAIPerf + "\n",
		} {
			if err := os.MkdirAll(filepath.Join(site, filepath.Dir(file)), 0o755); err != nil {
				return serverPython{}, err
			}
			if err := os.WriteFile(filepath.Join(site, file), []byte(text), 0o644); err != nil {
				return serverPython{}, err
			}
		}
	}
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return serverPython{}, err
	}
	// As pip writes a console script: the interpreter on the "#!" line.
	script := fmt.Sprintf("#!%s\nimport os, sys\nos.execv(%q, [\"vllm\"] + sys.argv[1:])\n", py, filepath.Join(fakes, "vllm"))
	if err := os.WriteFile(filepath.Join(bin, "vllm"), []byte(script), 0o755); err != nil {
		return serverPython{}, err
	}
	return serverPython{bin: bin, venvBin: filepath.Join(venv, "bin")}, nil
}

var (
	pipVenvOnce sync.Once
	pipVenvRoot string // removed by TestMain
	pipVenvDir  string
	pipVenvErr  error
)

// pipVenv is a venv with pip and without pytest, made once per test
// binary.
func pipVenv() (string, error) {
	pipVenvOnce.Do(func() {
		pipVenvRoot, pipVenvErr = os.MkdirTemp("", "benchkite-e2e-pipvenv-")
		if pipVenvErr != nil {
			return
		}
		pipVenvDir = filepath.Join(pipVenvRoot, "venv")
		if out, err := pythonCmd("python3", "-m", "venv", pipVenvDir).CombinedOutput(); err != nil {
			pipVenvErr = fmt.Errorf("python3 -m venv: %w\n%s", err, out)
		}
	})
	return pipVenvDir, pipVenvErr
}

// pythonCmd runs python with no configuration of the test's user.
func pythonCmd(python string, args ...string) *exec.Cmd {
	cmd := exec.Command(python, args...)
	cmd.Env = append(os.Environ(), "PIP_CONFIG_FILE="+os.DevNull, "PIP_DISABLE_PIP_VERSION_CHECK=1")
	return cmd
}

var (
	wheelsOnce sync.Once
	wheelsDir  string
	wheelsErr  error
)

// pytestWheels is a folder holding the wheels of the pytest lock for
// this machine's python3, downloaded once (from the index pip is set up
// for) and kept, named by the lock's hash, for later test runs.
func pytestWheels(t testing.TB) string {
	t.Helper()
	wheelsOnce.Do(func() {
		lock := toollocks.Pytest()
		wheelsDir = filepath.Join(os.TempDir(), "benchkite-pytest-wheels-"+lock.SHA256()[:16])
		if _, err := os.Stat(filepath.Join(wheelsDir, "complete")); err == nil {
			return
		}
		tmp, err := os.MkdirTemp(os.TempDir(), "benchkite-pytest-wheels-build-")
		if err != nil {
			wheelsErr = err
			return
		}
		defer os.RemoveAll(tmp)
		lockFile := filepath.Join(tmp, "lock.txt")
		if err := os.WriteFile(lockFile, lock.Text, 0o644); err != nil {
			wheelsErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		dl := filepath.Join(tmp, "wheels")
		cmd := exec.CommandContext(ctx, "python3", "-m", "pip", "download", "--no-deps", "--require-hashes", "--only-binary", ":all:", "-q", "-r", lockFile, "-d", dl)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			wheelsErr = fmt.Errorf("download the pytest lock's wheels: %w\n%s", err, out.String())
			return
		}
		if err := os.WriteFile(filepath.Join(dl, "complete"), nil, 0o644); err != nil {
			wheelsErr = err
			return
		}
		if err := os.Rename(dl, wheelsDir); err != nil {
			if _, serr := os.Stat(filepath.Join(wheelsDir, "complete")); serr != nil {
				wheelsErr = fmt.Errorf("keep the wheels: %w", err)
			}
		}
	})
	if wheelsErr != nil {
		t.Fatal(wheelsErr)
	}
	return wheelsDir
}
