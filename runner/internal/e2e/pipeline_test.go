package e2e

// The generated pipeline run the way Buildkite runs it: the generator's
// nightly output for the test recipes under testdata/pipeline, each GPU
// step's commands joined and run verbatim by the real agent's job
// executor (`buildkite-agent bootstrap --phases command`, which runs
// `/bin/bash -e -c "<commands>"` in a process group of its own), in the
// checkout, with the variables the agent gives a job; cancelled as the
// agent cancels (SIGTERM to the bootstrap's process group, which it
// passes on to the command's, the cancel grace period, SIGKILL); and the
// same command line run under GNU timeout, and under a shell wrapper that
// forwards the signal to its group (the runner then gets it twice). Whatever the ending, no process or container of the job
// may be left, the summary and annotation must be uploaded, and the
// verdict must be the right one.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/fakebin"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/steps/steptest"
)

// agentCancelGrace is the agent's default cancel-grace-period: the time
// between the SIGTERM of a cancel and the SIGKILL.
const agentCancelGrace = 10 * time.Second

var (
	pipelineOnce  sync.Once
	pipelineSteps map[string]pipelineStep
	pipelineErr   error
)

// pipelineStep is what a GPU step of the generated JSON holds that the
// agent uses to run it.
type pipelineStep struct {
	Key           string            `json:"key"`
	Label         string            `json:"label"`
	Command       string            `json:"command"`
	Commands      []string          `json:"commands"`
	Env           map[string]string `json:"env"`
	Agents        map[string]string `json:"agents"`
	ArtifactPaths []string          `json:"artifact_paths"`
	Timeout       int               `json:"timeout_in_minutes"`
	SoftFail      []struct {
		ExitStatus int `json:"exit_status"`
	} `json:"soft_fail"`
	Plugins []map[string]struct {
		PodSpec      *podSpec `json:"podSpec"`
		PodSpecPatch *podSpec `json:"podSpecPatch"`
	} `json:"plugins"`
}

type podSpec struct {
	HostNetwork bool `json:"hostNetwork"`
	Containers  []struct {
		Env []struct {
			Name      string          `json:"name"`
			Value     string          `json:"value"`
			ValueFrom json.RawMessage `json:"valueFrom"`
		} `json:"env"`
	} `json:"containers"`
}

// script is the step's command as the agent hands it to the shell: the
// commands joined by newlines.
func (s pipelineStep) script() string {
	if len(s.Commands) > 0 {
		return strings.Join(s.Commands, "\n")
	}
	return s.Command
}

// pod is the step's kubernetes pod, or nil for a step that runs on the
// agent's host.
func (s pipelineStep) pod() *podSpec {
	for _, p := range s.Plugins {
		if k, ok := p["kubernetes"]; ok {
			if k.PodSpec != nil {
				return k.PodSpec
			}
			return k.PodSpecPatch
		}
	}
	return nil
}

// generatedSteps runs the generator, built from this checkout, over the
// test recipes for a scheduled (nightly) build, and returns its GPU steps
// by key.
func generatedSteps(t *testing.T) map[string]pipelineStep {
	t.Helper()
	pipelineOnce.Do(func() { pipelineSteps, pipelineErr = generate() })
	if pipelineErr != nil {
		t.Fatal(pipelineErr)
	}
	return pipelineSteps
}

func generate() (map[string]pipelineStep, error) {
	root, err := testutil.FindModuleRoot()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "benchkite-e2e-pipeline-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := copyTree(filepath.Join("testdata", "pipeline", "workloads"), filepath.Join(dir, "workloads")); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	gen := filepath.Join(dir, "generator")
	build := exec.CommandContext(ctx, "go", "build", "-o", gen, "./generator")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the generator: %w\n%s", err, out)
	}
	// The bootstrap step runs the generator in the checkout: the profiles
	// are the checkout's own.
	cmd := exec.CommandContext(ctx, gen, "--workloads", "workloads", "--agents", filepath.Join(root, "agents", "profiles.yaml"), "--no-resolve")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "BUILDKITE_SOURCE=schedule")
	for _, k := range []string{"WORKLOADS", "BUILDKITE_PULL_REQUEST", "VLLM_IMAGE", "VLLM_COMMIT", "BENCH_ONLY", "BENCHKITE_AGENTS", "BENCHKITE_WORKLOADS"} {
		cmd.Env = append(cmd.Env, k+"=")
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("generator: %w\n%s", err, stderr.String())
	}
	var p struct {
		Steps []pipelineStep `json:"steps"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		return nil, fmt.Errorf("generator output: %w\n%s", err, out)
	}
	steps := map[string]pipelineStep{}
	for _, s := range p.Steps {
		if strings.HasPrefix(s.Key, "recipe:") {
			steps[s.Key] = s
		}
	}
	return steps, nil
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}

// ending is how a job ends.
type ending string

const (
	// completes: the job runs to its end, through the agent's bootstrap.
	completes ending = "completes"
	// agentCancel: the agent's cancel of a bootstrap, SIGTERM to its
	// process group, SIGKILL after the cancel grace period.
	agentCancel ending = "agent-cancel"
	// timeoutKill: the job runs under `timeout -k 5 120`, whose pid gets
	// SIGTERM; timeout sends it to the command and then to its group, so
	// the runner receives it twice.
	timeoutKill ending = "timeout-kill"
	// forwardingWrapper: the job runs under a shell that forwards a SIGTERM
	// to its whole group, and the agent's cancel reaches the group too:
	// the runner receives it twice.
	forwardingWrapper ending = "forwarding-wrapper"
)

// pipelineJob is one GPU step run as its job.
type pipelineJob struct {
	*e2e
	step   pipelineStep
	docker bool
}

// newPipelineJob prepares the step of recipe name in a fresh checkout
// holding the test recipes, with the runner binary as the bootstrap
// step's artifact.
func newPipelineJob(t *testing.T, name string) *pipelineJob {
	t.Helper()
	steps := generatedSteps(t)
	step, ok := steps["recipe:"+name]
	if !ok {
		keys := make([]string, 0, len(steps))
		for k := range steps {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Fatalf("the generated pipeline has no step for %s; it has %v", name, keys)
	}
	j := newStepJob(t, name, step, filepath.Join("testdata", "pipeline", "workloads"))
	// What the history step uploads for a recipe with no past night yet:
	// the GPU job downloads it at its gate.
	hist := &baseline.File{Version: baseline.FileVersion, FetchedAt: time.Now().UTC()}
	hist.Record(name, step.Key, 10, baseline.Result{}, nil)
	if err := hist.WriteDir(filepath.Join(j.downloads(), contract.HistoryStepKey, filepath.FromSlash(contract.HistoryDir))); err != nil {
		t.Fatal(err)
	}
	return j
}

// downloads is where the stand-in agent's artifact download finds what
// other steps uploaded: <step key>/<path>.
func (j *pipelineJob) downloads() string {
	return filepath.Join(j.dir, "agent", "downloads")
}

// newStepJob prepares step, the job of recipe name, in a fresh checkout
// whose workloads folder is a copy of workloads, with the runner binary
// as the bootstrap step's artifact and the variables the agent gives
// every job of a nightly build.
func newStepJob(t *testing.T, name string, step pipelineStep, workloads string) *pipelineJob {
	t.Helper()
	e := newE2E(t, name, "")
	j := &pipelineJob{e2e: e, step: step}
	if err := copyTree(workloads, filepath.Join(e.dir, "workloads")); err != nil {
		t.Fatal(err)
	}
	downloads := j.downloads()
	if err := os.MkdirAll(filepath.Join(downloads, "bootstrap", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(e.bin, filepath.Join(downloads, "bootstrap", "bin", "runner")); err != nil {
		t.Fatal(err)
	}
	// The job API's socket path must fit in 108 bytes; the test's
	// directories are longer.
	sockets, err := os.MkdirTemp("", "bk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockets) })
	// The variables the agent gives every job.
	script := step.script()
	e.setenv(
		"CI", "true",
		"BUILDKITE", "true",
		"BUILDKITE_AGENT_NAME", "gpu-agent-1",
		"BUILDKITE_AGENT_META_DATA_QUEUE", step.Agents["queue"],
		"BUILDKITE_ORGANIZATION_SLUG", "benchkite",
		"BUILDKITE_PIPELINE_SLUG", "benchkite-nightly",
		"BUILDKITE_PIPELINE_DEFAULT_BRANCH", "main",
		"BUILDKITE_REPO", "https://github.com/benchkite/benchkite.git",
		"BUILDKITE_COMMIT", "0123456789abcdef0123456789abcdef01234567",
		"BUILDKITE_MESSAGE", "nightly",
		"BUILDKITE_LABEL", step.Label,
		"BUILDKITE_STEP_KEY", step.Key,
		"BUILDKITE_STEP_ID", "0190b1e4-2222-4000-8000-000000000001",
		"BUILDKITE_COMMAND", script,
		"BUILDKITE_SCRIPT_PATH", script,
		"BUILDKITE_TIMEOUT", fmt.Sprint(step.Timeout),
		"BUILDKITE_RETRY_COUNT", "0",
		"BUILDKITE_BUILD_CHECKOUT_PATH", e.dir,
		"BUILDKITE_BUILD_CREATOR", "Nightly",
		"BUILDKITE_SHELL", "/bin/bash -e -c",
		// What the bootstrap needs besides; the checkout phase, which
		// would use the repository, does not run.
		"BUILDKITE_BUILD_ID", "0190b1e4-1111-4000-8000-000000000042",
		"BUILDKITE_BUILD_PATH", filepath.Join(e.dir, "..", "builds"),
		"BUILDKITE_PIPELINE_PROVIDER", "github",
		"BUILDKITE_SOCKETS_PATH", sockets,
		"BUILDKITE_BRANCH", "main",
		"FAKE_AGENT_DOWNLOADS", downloads,
	)
	for k, v := range step.Env {
		e.setenv(k, v)
	}
	if pod := step.pod(); pod != nil {
		// The pod's container environment; a secret's value is the
		// cluster's, here a stand-in.
		for _, c := range pod.Containers {
			for _, v := range c.Env {
				val := v.Value
				if len(v.ValueFrom) > 0 {
					val = "cluster-secret-" + strings.ToLower(v.Name)
				}
				e.setenv(v.Name, val)
			}
		}
		if !pod.HostNetwork {
			// The pod has a network of its own, where the server's
			// default port is free; this machine's stands in for it
			// with a port nothing holds.
			e.setenv("BENCHKITE_PORT", fmt.Sprint(e.port))
		}
	} else {
		// A docker host: the container's port is published on the
		// host's loopback, here one nothing holds; the stand-in vllm in
		// the container gets the harness's knobs through its image.
		j.docker = true
		e.setenv("BENCHKITE_PORT", fmt.Sprint(e.port))
		e.setenv("FAKE_DOCKER_IMAGE_ENV", strings.Join([]string{markerEnv, "FAKE_VLLM_ARGV_LOG", "FAKE_VLLM_TOKEN_DELAY", "FAKE_VLLM_IGNORE_SIGTERM"}, ","))
	}
	return j
}

// jobProc is the job's process: bash, or what wraps it.
type jobProc struct {
	cmd    *exec.Cmd
	out    *lineLog
	done   chan struct{}
	killed bool // the job outlived the cancel grace period
}

// start runs the step's commands as the agent does, wrapped as the
// ending asks.
func (j *pipelineJob) start(end ending) *jobProc {
	j.t.Helper()
	script := j.step.script()
	var argv []string
	switch end {
	case completes, agentCancel:
		argv = []string{steptest.AgentBinary(j.t), "bootstrap", "--phases", "command"}
	case timeoutKill:
		argv = []string{"timeout", "-k", "5", "120", "/bin/bash", "-e", "-c", script}
	case forwardingWrapper:
		argv = []string{"/bin/bash", "-c", `trap 'trap - TERM; kill -TERM 0' TERM; /bin/bash -e -c "$1" & wait $!; wait $!`, "wrapper", script}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = j.dir
	cmd.Env = j.environ()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &jobProc{cmd: cmd, out: &lineLog{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	j.read.add(p.out)
	if err := cmd.Start(); err != nil {
		j.t.Fatalf("start the job: %v", err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	j.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
	return p
}

// waitBound waits for the job's process to end, or fails the test.
func (j *pipelineJob) waitBound(p *jobProc, bound time.Duration) {
	j.t.Helper()
	select {
	case <-p.done:
	case <-time.After(bound):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
		j.t.Fatalf("the job still ran after %s; killed it. Output:\n%s", bound, p.out.String())
	}
}

// cancel ends the job as the ending does, once the bench runs.
func (j *pipelineJob) cancel(p *jobProc, end ending) {
	j.t.Helper()
	deadline := time.Now().Add(pollBound)
	for {
		log, _ := os.ReadFile(j.results("bench-short.log"))
		if strings.Contains(string(log), "Starting main benchmark run") {
			break
		}
		select {
		case <-p.done:
			j.t.Fatalf("the job ended before the cancel; output:\n%s", p.out.String())
		default:
		}
		if time.Now().After(deadline) {
			j.t.Fatalf("the bench never started; output:\n%s", p.out.String())
		}
		time.Sleep(pollPeriod)
	}
	pid := p.cmd.Process.Pid
	switch end {
	case agentCancel, forwardingWrapper:
		if err := syscall.Kill(-pid, syscall.SIGTERM); err != nil {
			j.t.Fatal(err)
		}
		select {
		case <-p.done:
		case <-time.After(agentCancelGrace):
			p.killed = true
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-p.done
		}
	case timeoutKill:
		if err := exec.Command("kill", "-TERM", fmt.Sprint(pid)).Run(); err != nil {
			j.t.Fatal(err)
		}
		j.waitBound(p, time.Minute)
	}
}

// uploadArtifacts is the agent's artifact phase, which follows the
// command phase also after a cancel, within the grace period: the step's
// artifact_paths, uploaded from the checkout. The bootstrap's own would
// call the Buildkite API; the stand-in agent takes the same upload.
func (j *pipelineJob) uploadArtifacts(p *jobProc) {
	j.t.Helper()
	if p.killed || len(j.step.ArtifactPaths) == 0 {
		return
	}
	cmd := exec.Command(filepath.Join(fakebin.Build(j.t), fakebin.BuildkiteAgent), "artifact", "upload", strings.Join(j.step.ArtifactPaths, ";"))
	cmd.Dir = j.dir
	cmd.Env = j.environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		j.t.Errorf("artifact upload %v: %v\n%s", j.step.ArtifactPaths, err, out)
	}
}

// check asserts what every ending must leave: no process of the job, no
// container, the summary and annotation uploaded, and the verdict.
func (j *pipelineJob) check(p *jobProc, wantVerdict string) {
	j.t.Helper()
	// Once the job's process has ended the agent reports the job done
	// and, on Kubernetes, the pod goes: nothing may still be running.
	j.checkNoLeftovers()
	j.uploadArtifacts(p)
	if p.killed {
		j.t.Errorf("the job outlived the agent's cancel grace period (%s) and was killed", agentCancelGrace)
	}
	if j.docker {
		if left := j.containers(); len(left) > 0 {
			j.t.Errorf("containers left on the host: %v", left)
		}
	}
	var s summary.Summary
	data, err := os.ReadFile(filepath.Join(j.dir, agentArtifacts, "results", j.recipe, "summary.json"))
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		j.t.Fatalf("no summary.json was uploaded: %v\njob output:\n%s", err, p.out.String())
	}
	if s.Verdict != wantVerdict {
		j.t.Errorf("verdict = %q (%v), want %q\njob output:\n%s", s.Verdict, s.Problems, wantVerdict, p.out.String())
	}
	if s.Buildkite == nil || s.Buildkite.StepKey != j.step.Key {
		j.t.Errorf("summary's Buildkite job = %+v, want step key %s", s.Buildkite, j.step.Key)
	}
	style := "success"
	if wantVerdict != summary.VerdictPass {
		style = "error"
	}
	j.checkAnnotation(style)
	if wantVerdict != summary.VerdictPass {
		if !strings.Contains(strings.Join(s.Problems, "\n"), "canceled: received terminated") {
			j.t.Errorf("problems %q do not say the job was cancelled", s.Problems)
		}
		out := p.out.String()
		if strings.Contains(out, "second cancel") {
			j.t.Errorf("one cancel was taken for two:\n%s", lastLines(out, 40))
		}
	}
}

// TestPipelineAsBuildkiteRunsIt runs each runtime's generated step to its
// end and under each kind of cancel.
func TestPipelineAsBuildkiteRunsIt(t *testing.T) {
	t.Parallel()
	requireLinux(t)
	if _, err := exec.LookPath("timeout"); err != nil {
		t.Fatalf("GNU timeout is needed: %v", err)
	}
	runtimes := []struct{ recipe, what string }{
		{"verbatim-mi355x", "native, Kubernetes pod"},
		{"verbatim-b200", "native, Kubernetes pod on the host network"},
		{"verbatim-h200", "docker host"},
	}
	for _, rt := range runtimes {
		for _, end := range []ending{completes, agentCancel, timeoutKill, forwardingWrapper} {
			t.Run(rt.recipe+"/"+string(end), func(t *testing.T) {
				t.Parallel()
				j := newPipelineJob(t, rt.recipe)
				if end != completes {
					// Slow tokens keep the bench running into the cancel.
					j.setenv("FAKE_VLLM_TOKEN_DELAY", "200ms")
				}
				p := j.start(end)
				want := summary.VerdictError
				if end == completes {
					j.waitBound(p, runBound)
					if code := p.cmd.ProcessState.ExitCode(); code != 0 {
						t.Errorf("the %s job exited %d, want 0; its last lines:\n%s", rt.what, code, lastLines(p.out.String(), 20))
					}
					want = summary.VerdictPass
				} else {
					j.cancel(p, end)
				}
				if testing.Verbose() {
					_, _ = io.WriteString(os.Stdout, lastLines(p.out.String(), 15)+"\n")
				}
				j.check(p, want)
				if end == completes {
					// The server's Python imports pytest: nothing installed.
					j.checkPytest(p, summary.PytestSkipped, standInPytest)
				}
			})
		}
	}
	// A server's Python without pytest gets the pinned one before the
	// server starts: natively, and in the container on a docker host.
	for _, recipe := range []string{"verbatim-mi355x", "verbatim-h200"} {
		t.Run(recipe+"/completes-installing-pytest", func(t *testing.T) {
			t.Parallel()
			j := newPipelineJob(t, recipe)
			j.withoutPytest(pytestWheels(t))
			p := j.start(completes)
			j.waitBound(p, runBound)
			if code := p.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("the job exited %d, want 0; its last lines:\n%s", code, lastLines(p.out.String(), 30))
			}
			j.check(p, summary.VerdictPass)
			j.checkPytest(p, summary.PytestInstalled, "9.2.0")
		})
	}
}

// checkPytest checks the uploaded summary's pytest step and that the
// job's log shows it.
func (j *pipelineJob) checkPytest(p *jobProc, action, version string) {
	j.t.Helper()
	var s summary.Summary
	data, err := os.ReadFile(filepath.Join(j.dir, agentArtifacts, "results", j.recipe, "summary.json"))
	if err == nil {
		err = json.Unmarshal(data, &s)
	}
	if err != nil {
		j.t.Fatalf("summary.json: %v", err)
	}
	ps := s.ServerPytest
	if ps == nil || ps.Action != action || ps.Version != version {
		j.t.Fatalf("summary's pytest step = %+v, want %s, version %s", ps, action, version)
	}
	out := p.out.String()
	switch action {
	case summary.PytestSkipped:
		if !strings.Contains(out, "runner: pytest "+version+" imports in ") {
			j.t.Errorf("the job log does not show the pytest step:\n%s", lastLines(out, 40))
		}
	case summary.PytestInstalled:
		if !slices.Contains(ps.Installed, "pytest=="+version) || !strings.Contains(out, "[pip] Successfully installed") || !strings.Contains(out, "runner: installed ") {
			j.t.Errorf("pytest step %+v; the job log:\n%s", ps, lastLines(out, 60))
		}
		// The install happened before the server started.
		if i, k := strings.Index(out, "runner: installed "), strings.Index(out, "Started server process"); i < 0 || k < 0 || i > k {
			j.t.Errorf("pytest was not installed before the server started:\n%s", lastLines(out, 60))
		}
	}
}
