package e2e

// End-to-end runs of a docker-runtime recipe (an H200 recipe, whose
// profile runs the server in a container) against the stand-in docker:
// the server is `docker run -d`, followed by `docker logs -f`, the bench
// runs through `docker exec`, teardown is `docker stop` and `docker rm -f`.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/shell"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/execlog"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/fakebin"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// dockerRecipe is tinyRecipe on H200, a docker host.
func dockerRecipe(name string, reps int) string {
	return strings.Replace(tinyRecipe(name, reps), "gpu: MI355X", "gpu: H200", 1)
}

// newDockerE2E prepares a docker recipe's run, with the stand-ins' start
// log on. The variables given (NAME, value pairs), the run's marker (so
// that leftovers in containers are found), the start log and the vllm
// argv log are baked into the stand-in's image: a container gets only its
// image's environment and the -e values.
func newDockerE2E(t *testing.T, name string, reps int, imageEnv ...string) (*e2e, func() []execlog.Entry) {
	t.Helper()
	e := newE2E(t, name, dockerRecipe(name, reps))
	read := e.execLog()
	e.setenv(imageEnv...)
	names := []string{markerEnv, execlog.Env, "FAKE_VLLM_ARGV_LOG"}
	for i := 0; i+1 < len(imageEnv); i += 2 {
		names = append(names, imageEnv[i])
	}
	e.setenv("FAKE_DOCKER_IMAGE_ENV", strings.Join(names, ","))
	return e, read
}

// containerName is the runner's name for the job's container.
func (e *e2e) containerName() string {
	return "benchkite-" + e.recipe + "-" + e.env["BUILDKITE_JOB_ID"]
}

// containers lists the containers the stand-in docker still holds.
func (e *e2e) containers() []string {
	e.t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.dir, ".fake-docker", "containers"))
	if err != nil && !os.IsNotExist(err) {
		e.t.Fatal(err)
	}
	var out []string
	for _, d := range entries {
		out = append(out, d.Name())
	}
	return out
}

// docker runs the stand-in docker in the job's environment.
func (e *e2e) docker(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(fakebin.Build(e.t), fakebin.Docker), args...)
	cmd.Dir = e.dir
	cmd.Env = e.environ()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// argvOf lists "prog sub" of each entry.
func progs(entries []execlog.Entry) []string {
	var out []string
	for _, en := range entries {
		p := filepath.Base(en.Argv[0])
		if len(en.Argv) > 1 {
			p += " " + en.Argv[1]
		}
		out = append(out, p)
	}
	return out
}

// envOf returns the NAME=value entries of en's environment.
func envHas(en execlog.Entry, kv string) bool { return slices.Contains(en.Env, kv) }

func TestE2EDockerHappyPath(t *testing.T) {
	t.Parallel()
	const name = "e2e-docker-happy"
	e, read := newDockerE2E(t, name, 3)
	e.setenv("HF_TOKEN", "hf-token-value")
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 0)

	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "ok", "bench": "ok", "lm_eval": "ok", "gate": "ok"})
	if s.Verdict != summary.VerdictPass {
		t.Errorf("verdict = %q, want pass", s.Verdict)
	}
	// The bench ran in the container and wrote through the results mount.
	for rep := 1; rep <= 3; rep++ {
		if m := benchJSON(t, e.results("bench", "bench-short-run-"+strconv.Itoa(rep)+".json")); m["completed"] != 8.0 {
			t.Errorf("repetition %d completed %v of 8 prompts", rep, m["completed"])
		}
	}
	if len(s.Bench) != 1 || s.Bench[0].Status != summary.StatusOK || s.Bench[0].File != "bench-short.json" || !fileExists(e.results("bench-short.json")) {
		t.Errorf("summary bench = %+v, want one ok run in bench-short.json", s.Bench)
	}

	ctr := e.containerName()
	if diff := cmp.Diff(&summary.ServerPytest{Python: "docker exec " + ctr + " python3", Action: summary.PytestSkipped, Version: standInPytest}, s.ServerPytest,
		cmpopts.IgnoreFields(summary.ServerPytest{}, "DurationSeconds")); diff != "" {
		t.Errorf("summary's pytest step (-want +got):\n%s", diff)
	}
	if !strings.Contains(o.stdout, "runner: pytest "+standInPytest+" imports in docker exec "+ctr+" python3; nothing installed") {
		t.Errorf("the log does not show the pytest step:\n%s", o.stdout)
	}
	entries := read()
	// The container's server starts on its own time; everything else in
	// order, each bench started by its docker exec.
	got := progs(entries)
	if n := slices.Index(got, "vllm serve"); n < 0 || slices.Contains(got[n+1:], "vllm serve") {
		t.Errorf("started %q, want one vllm serve", got)
	}
	got = slices.DeleteFunc(got, func(p string) bool { return p == "vllm serve" })
	got = logsAfterRun(got, func(p string) bool { return p == "docker logs" })
	// The container waits at its gate for the pytest step: the probe
	// (pytest imports in the image's Python: nothing installed), then
	// the exec that lets vLLM start.
	// The bench driver starts in the container (its image has no bench
	// entry point here: each run is then its own docker exec).
	want := []string{"docker ps", "docker run", "docker logs", "docker exec", "docker exec", "docker inspect",
		"docker exec", "docker exec", "vllm bench", "docker exec", "vllm bench", "docker exec", "vllm bench",
		"docker inspect", "lm_eval --model", "docker stop", "docker rm", "docker image", "buildkite-agent artifact", "buildkite-agent annotate"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Fatalf("started processes diff (-got +want):\n%s", diff)
	}
	for _, en := range entries {
		switch p := progs([]execlog.Entry{en})[0]; p {
		case "docker exec":
			if slices.Equal(en.Argv[1:4], []string{"exec", ctr, "python3"}) || slices.Equal(en.Argv[1:4], []string{"exec", ctr, "touch"}) {
				// The pytest step: no token.
				if slices.ContainsFunc(en.Env, func(kv string) bool { return strings.HasPrefix(kv, "HF_TOKEN=") }) {
					t.Errorf("%q got the HF token", en.Argv[:4])
				}
				continue
			}
			// A bench run, or the bench driver (stdin open) in the image's Python.
			if !slices.Equal(en.Argv[1:6], []string{"exec", "-e", "HF_TOKEN", ctr, "vllm"}) && !slices.Equal(en.Argv[1:8], []string{"exec", "-i", "-e", "HF_TOKEN", ctr, "python3", "-c"}) {
				t.Errorf("docker exec argv = %q, want the token by name, then the container and vllm or the bench driver", en.Argv)
			}
			fallthrough
		case "docker run":
			if !envHas(en, "HF_TOKEN=hf-token-value") {
				t.Errorf("%s lacks the HF token it passes by name", p)
			}
		case "docker logs", "docker stop", "docker rm":
			if slices.ContainsFunc(en.Env, func(kv string) bool { return strings.HasPrefix(kv, "HF_TOKEN=") }) {
				t.Errorf("%s got the HF token", p)
			}
		case "vllm serve", "vllm bench":
			// Inside the container: the image's environment and -e
			// values only.
			if !envHas(en, "HF_TOKEN=hf-token-value") {
				t.Errorf("%s in the container lacks the HF token", p)
			}
			for _, kv := range en.Env {
				if strings.HasPrefix(kv, "BUILDKITE") || strings.HasPrefix(kv, "BENCHKITE_PASS_ENV=") || strings.HasPrefix(kv, "TMPDIR=") {
					t.Errorf("%s in the container got %s from the job", p, kv)
				}
			}
			if p == "vllm serve" && !envHas(en, "VLLM_DEEP_GEMM_WARMUP=skip") {
				t.Errorf("vllm serve lacks the profile's -e VLLM_DEEP_GEMM_WARMUP=skip: %q", en.Env)
			}
		}
	}
	if starts := e.serverStarts(); len(starts) != 1 || !slices.Contains(starts[0], "0.0.0.0") {
		t.Errorf("vllm serve started as %q, want once, bound to the container's interfaces", starts)
	}

	// `runner plan` lists what ran on the host.
	var started []string
	for _, en := range entries {
		if filepath.Base(en.Argv[0]) != "vllm" {
			started = append(started, shell.Join(en.Argv))
		}
	}
	started = logsAfterRun(started, func(p string) bool { return strings.HasPrefix(p, "docker logs ") })
	// The container carries the runner's identity, which a plan (no
	// runner of its own) shows as a placeholder.
	runnerLabel := regexp.MustCompile(`'?benchkite\.runner=[^ ']+'?`)
	for i, s := range started {
		started[i] = runnerLabel.ReplaceAllString(s, "'benchkite.runner=<pid-namespace>/<pid>/<start-time>'")
	}
	var planned []string
	for _, argv := range planArgvs(e.plan("--health-timeout", "5m")) {
		// The version query of tools from PATH runs the real python3,
		// which records nothing; every stand-in does. The pytest install
		// runs only when the probe finds no pytest; here it found the
		// image's.
		if !strings.HasPrefix(argv, "python3 -c 'import sys") && !strings.HasPrefix(argv, "docker exec -i -e PIP_") {
			planned = append(planned, strings.Replace(argv, "--style 'success|warning|error'", "--style success", 1))
		}
	}
	if diff := cmp.Diff(planned, started); diff != "" {
		t.Errorf("plan and run differ (-planned +started):\n%s", diff)
	}

	if left := e.containers(); len(left) != 0 {
		t.Errorf("containers left: %q", left)
	}
	e.checkAnnotation("success", "### ✅ `e2e-docker-happy`: pass")
	checkLastLines(t, o, 1, "+++ :white_check_mark: e2e-docker-happy passed")
	e.checkNoLeftovers()
}

func TestE2EDockerServerExitsDuringLoad(t *testing.T) {
	t.Parallel()
	const name = "e2e-docker-load-crash"
	const rootCause = "torch.OutOfMemoryError: CUDA out of memory (docker drill)"
	e, read := newDockerE2E(t, name, 1,
		"FAKE_VLLM_STARTUP_DELAY", "1s", "FAKE_VLLM_EXIT_DURING_LOAD", "1", "FAKE_VLLM_EXIT_MESSAGE", rootCause)
	// The run's bound is far below this timeout: ready must notice the
	// container's end, not wait it out.
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 1)

	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "failed", "bench": "not-run", "lm_eval": "not-run", "gate": "ok"})
	if err := phaseError(s, "ready"); !strings.Contains(err, "server exited before it was ready") {
		t.Errorf("ready error = %q, want the server's exit", err)
	}
	if log, err := os.ReadFile(e.results("server.log")); err != nil || !strings.Contains(string(log), rootCause) {
		t.Errorf("server.log (err %v) lacks the root cause %q", err, rootCause)
	}
	_, after, ok := strings.Cut(o.stdout, "+++ :warning: last 80 lines of the server log")
	if !ok || !strings.Contains(after, rootCause) {
		t.Errorf("the log does not show the container's last lines with %q:\n%s", rootCause, o.stdout)
	}
	if got := progs(read()); slices.Contains(got, "vllm bench") || !slices.Contains(got, "docker rm") {
		t.Errorf("started %q: want no bench, and the container removed", got)
	}
	if left := e.containers(); len(left) != 0 {
		t.Errorf("containers left: %q", left)
	}
	checkLastLines(t, o, tailLines, "+++ :x: e2e-docker-load-crash: error", "ready failed: ready: server exited before it was ready")
	e.checkNoLeftovers()
}

func TestE2EDockerSIGTERMDuringBench(t *testing.T) {
	t.Parallel()
	const name = "e2e-docker-sigterm"
	// Slow enough to cancel mid-run, fast enough that the server drains
	// its requests within the 2 s a cancel leaves it.
	e, _ := newDockerE2E(t, name, 1, "FAKE_VLLM_TOKEN_DELAY", "100ms")
	r := e.start("--health-timeout", "5m", "--grace", "10s")
	e.waitFor("vllm bench serve running in the container", r, func() bool {
		log, _ := os.ReadFile(e.results("bench-short.log"))
		return strings.Contains(string(log), "Starting main benchmark run") && e.findProc("vllm bench serve") != 0
	})
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// A bound only.
	o := r.waitWithin(30 * time.Second)
	checkCode(t, o, 143)

	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "ok", "bench": "canceled", "lm_eval": "canceled", "gate": "canceled"})
	if s.Verdict != summary.VerdictError {
		t.Errorf("verdict = %q, want error", s.Verdict)
	}
	// docker stop: SIGTERM to the server, which shuts down gracefully.
	if log, _ := os.ReadFile(e.results("server.log")); !strings.Contains(string(log), "Shutting down") {
		t.Errorf("server.log does not show a graceful shutdown:\n%s\njob log:\n%s", log, o.stdout)
	}
	// docker exec forwards no signal: the bench in the container runs on
	// until docker stop ends the server; whether it writes a result before
	// the container's end kills it is a race, but a result it writes is a
	// cut-short one, and the summary never counts it.
	if fileExists(e.results("bench", "bench-short.json")) {
		if m := benchJSON(t, e.results("bench", "bench-short.json")); m["completed"] == 8.0 || m["failed"] == 0.0 {
			t.Errorf("bench-short.json completed %v, failed %v; want the bench cut short by the server's stop", m["completed"], m["failed"])
		}
	}
	if len(s.Bench) != 1 || s.Bench[0].Status == summary.StatusOK {
		t.Errorf("summary bench = %+v, want the canceled run not counted", s.Bench)
	}
	if left := e.containers(); len(left) != 0 {
		t.Errorf("containers left: %q", left)
	}
	e.checkUploaded("summary.json", "server.log", "bench-short.log")
	checkLastLines(t, o, tailLines, "+++ :x: e2e-docker-sigterm: error", "bench canceled: short: repetition 1")
	e.checkNoLeftovers()
}

func TestE2EDockerNameConflict(t *testing.T) {
	t.Parallel()
	const name = "e2e-docker-conflict"
	e, read := newDockerE2E(t, name, 1)
	// A container by the job's name exists already (the image's
	// environment carries the marker, so the test's cleanup finds it).
	other := strconv.Itoa(freePort(t))
	out, err := e.docker("run", "-d", "--name", e.containerName(), "-p", "127.0.0.1:"+other+":"+other, "vllm/vllm-openai:nightly", "m", "--port", other)
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	id := strings.TrimSpace(out)
	deadline := time.Now().Add(pollBound)
	for len(e.serverStarts()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the test's container never started its server")
		}
		time.Sleep(pollPeriod)
	}
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 1)

	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "failed", "ready": "not-run", "bench": "not-run", "lm_eval": "not-run", "gate": "ok"})
	if err := phaseError(s, "serve"); !strings.HasPrefix(err, "start container: docker exited with code 125: docker: Error response from daemon: Conflict.") {
		t.Errorf("serve error = %q, want docker run's failure with docker's reason", err)
	}
	// docker's reason is in the server log, and in the job log.
	conflict := `Conflict. The container name "/` + e.containerName() + `" is already in use by container "` + id + `"`
	if log, _ := os.ReadFile(e.results("server.log")); !strings.Contains(string(log), conflict) {
		t.Errorf("server.log lacks %q:\n%s", conflict, log)
	}
	if p := s.Phase(summary.PhaseServe); p == nil || !strings.Contains(p.Error, conflict) {
		t.Errorf("serve phase = %+v, want docker's reason in its error", p)
	}
	if !strings.Contains(o.stdout, conflict) {
		t.Errorf("the job log lacks %q", conflict)
	}
	// The first docker run and its server are the test's; the image
	// inspect is the provenance.
	want := []string{"docker run", "vllm serve", "docker ps", "docker run", "docker stop", "docker rm", "docker image", "buildkite-agent artifact", "buildkite-agent annotate"}
	if diff := cmp.Diff(progs(read()), want); diff != "" {
		t.Errorf("started processes diff (-got +want):\n%s", diff)
	}
	// Teardown stops and removes the container by name, so the one that
	// held it (a leftover of this job: the name carries the job's ID) is
	// gone too.
	if left := e.containers(); len(left) != 0 {
		t.Errorf("containers left: %q", left)
	}
	e.checkAnnotation("error", "**serve** failed: docker: Error response from daemon: Conflict.")
	checkLastLines(t, o, tailLines, "+++ :x: e2e-docker-conflict: error", "serve failed: start container: docker exited with code 125")
	e.checkNoLeftovers()
}

// logsAfterRun moves `docker logs -f`, which runs alongside everything
// after `docker run` (it starts as the server's output stream, while the
// runner already polls the server), to right after docker run: where it
// is started, not where its start happened to be recorded.
func logsAfterRun(procs []string, isLogs func(string) bool) []string {
	i := slices.IndexFunc(procs, isLogs)
	if i < 0 {
		return procs
	}
	logs := procs[i]
	out := slices.Delete(slices.Clone(procs), i, i+1)
	run := slices.IndexFunc(out, func(p string) bool { return strings.HasPrefix(p, "docker run") })
	return slices.Insert(out, run+1, logs)
}
