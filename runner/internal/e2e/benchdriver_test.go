package e2e

// The bench driver: every bench run of a job in one Python process,
// through vLLM's bench entry point. The server's Python of the other
// tests has no vllm package, so their bench runs take the CLI fallback;
// these give it the stand-in entry point (runner/standins/pyvllm), which
// runs the stand-in `vllm bench serve` with the argv the driver got.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/shell"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

// withBenchEntryPoint gives the run's server a Python whose site-packages
// hold the stand-in vllm.benchmarks.serve.
func (e *e2e) withBenchEntryPoint() {
	e.t.Helper()
	py, err := makeServerPython(e.t.TempDir(), e.fakes, true)
	if err != nil {
		e.t.Fatalf("the server's Python: %v", err)
	}
	out, err := pythonCmd(filepath.Join(py.venvBin, "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").Output()
	if err != nil {
		e.t.Fatalf("find the venv's site-packages: %v", err)
	}
	src := filepath.Join(testutil.ModuleRoot(e.t), "runner", "standins", "pyvllm", "vllm")
	if out, err := exec.Command("cp", "-r", src, strings.TrimSpace(string(out))).CombinedOutput(); err != nil {
		e.t.Fatalf("copy the stand-in vllm package: %v\n%s", err, out)
	}
	path := e.env["PATH"]
	_, rest, _ := strings.Cut(path, string(os.PathListSeparator))
	e.setenv("PATH", py.bin+string(os.PathListSeparator)+rest, imagePathEnv, py.venvBin)
}

func TestE2EBenchDriver(t *testing.T) {
	t.Parallel()
	const name = "e2e-bench-driver"
	e := newE2E(t, name, tinyRecipe(name, 3))
	e.withBenchEntryPoint()
	read := e.execLog()
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 0)

	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "ok", "bench": "ok", "lm_eval": "ok", "gate": "ok"})
	if n := len(regexp.MustCompile(`(?m)^runner: bench run took [0-9.]+ s in the bench driver`).FindAllString(o.stdout, -1)); n != 3 {
		t.Errorf("%d bench runs in the bench driver, want 3:\n%s", n, o.stdout)
	}
	if n := strings.Count(o.stdout, "-c '<benchdriver.py>'"); n != 1 {
		t.Errorf("the bench driver started %d times, want once:\n%s", n, o.stdout)
	}
	if strings.Contains(o.stdout, "each bench run is its own") {
		t.Errorf("the runner fell back to the CLI:\n%s", o.stdout)
	}
	for rep := 1; rep <= 3; rep++ {
		if m := benchJSON(t, e.results("bench", "bench-short-run-"+strconv.Itoa(rep)+".json")); m["completed"] != 8.0 {
			t.Errorf("repetition %d completed %v of 8 prompts", rep, m["completed"])
		}
	}
	// The bench's output reaches its log and the result table was checked
	// against its file, as with the CLI.
	log, _ := os.ReadFile(e.results("bench-short.log"))
	if c := strings.Count(string(log), "Successful requests:"); c != 3 {
		t.Errorf("bench-short.log holds %d result tables, want 3:\n%s", c, log)
	}
	if strings.Contains(string(log), "benchkite-bench: ") {
		t.Errorf("the driver's protocol lines reached the bench's log:\n%s", log)
	}

	// Each run got the argv the plan lists for it, which the CLI would
	// have got.
	var planned, started []string
	for _, p := range planArgvs(e.plan("--health-timeout", "5m")) {
		if strings.HasPrefix(p, "vllm bench serve ") {
			planned = append(planned, p)
		}
	}
	for _, en := range read() {
		if len(en.Argv) > 2 && en.Argv[1] == "bench" {
			started = append(started, shell.Join(en.Argv))
		}
	}
	if len(planned) != 3 {
		t.Errorf("plan lists %d bench runs, want 3", len(planned))
	}
	if diff := cmp.Diff(planned, started); diff != "" {
		t.Errorf("bench argv (-planned +run through the driver):\n%s", diff)
	}
	e.checkNoLeftovers()
}

// TestE2EBenchDriverFallback: the default server Python has no vllm
// package; the driver says so and every run is its own process.
func TestE2EBenchDriverFallback(t *testing.T) {
	t.Parallel()
	const name = "e2e-bench-driver-fallback"
	e := newE2E(t, name, tinyRecipe(name, 3))
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 0)
	if !strings.Contains(o.stdout, "has no vllm.benchmarks.serve entry point; each bench run is its own `vllm bench serve`") {
		t.Errorf("the log does not say why the CLI runs:\n%s", o.stdout)
	}
	if n := len(regexp.MustCompile("(?m)^runner: bench run took [0-9.]+ s as `vllm bench serve`").FindAllString(o.stdout, -1)); n != 3 {
		t.Errorf("%d bench runs as the CLI, want 3:\n%s", n, o.stdout)
	}
	e.checkNoLeftovers()
}

// TestE2EBenchDriverSIGTERM: a cancel during a run in the driver ends the
// driver's process group, the bench it runs with it.
func TestE2EBenchDriverSIGTERM(t *testing.T) {
	t.Parallel()
	const name = "e2e-bench-driver-sigterm"
	e := newE2E(t, name, tinyRecipe(name, 1))
	e.withBenchEntryPoint()
	e.setenv("FAKE_VLLM_TOKEN_DELAY", "300ms")
	r := e.start("--health-timeout", "5m")
	e.waitFor("a bench run in the driver", r, func() bool {
		log, _ := os.ReadFile(e.results("bench-short.log"))
		return strings.Contains(string(log), "Starting main benchmark run") && e.findProc("vllm bench serve") != 0 && e.findProc("benchkite-bench") != 0
	})
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	o := r.waitWithin(30 * time.Second)
	checkCode(t, o, 143)
	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "ok", "bench": "canceled", "lm_eval": "canceled", "gate": "canceled"})
	if len(s.Bench) != 1 || s.Bench[0].Status != summary.StatusCanceled {
		t.Errorf("bench entries %+v, want the one canceled", s.Bench)
	}
	if !strings.Contains(o.stdout, "in the bench driver") {
		t.Errorf("the run was not in the driver:\n%s", o.stdout)
	}
	e.checkNoLeftovers()
}

// TestE2EBenchDriverOff: BENCHKITE_BENCH_DRIVER=off runs each bench as
// its own process although the entry point is there.
func TestE2EBenchDriverOff(t *testing.T) {
	t.Parallel()
	const name = "e2e-bench-driver-off"
	e := newE2E(t, name, tinyRecipe(name, 1))
	e.withBenchEntryPoint()
	e.setenv("BENCHKITE_BENCH_DRIVER", "off")
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 0)
	if !strings.Contains(o.stdout, "runner: BENCHKITE_BENCH_DRIVER=off: each bench run is its own `vllm bench serve`") || strings.Contains(o.stdout, "<benchdriver.py>") {
		t.Errorf("the log does not show the CLI chosen, or shows the driver:\n%s", o.stdout)
	}
	if n := len(regexp.MustCompile("(?m)^runner: bench run took [0-9.]+ s as `vllm bench serve`").FindAllString(o.stdout, -1)); n != 1 {
		t.Errorf("%d bench runs as the CLI, want 1:\n%s", n, o.stdout)
	}
	if plan := e.plan("--health-timeout", "5m"); strings.Contains(plan, "the bench driver") {
		t.Errorf("the plan lists the bench driver although it is off:\n%s", plan)
	}
}
