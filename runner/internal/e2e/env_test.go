package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/benchkite/benchkite/internal/shell"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/execlog"
)

// execLog turns on the stand-ins' start log and returns a reader of it.
func (e *e2e) execLog() func() []execlog.Entry {
	path := filepath.Join(e.dir, "exec.jsonl")
	e.setenv(execlog.Env, path)
	return func() []execlog.Entry {
		e.t.Helper()
		f, err := os.Open(path)
		if err != nil {
			e.t.Fatalf("no stand-in was started: %v", err)
		}
		defer f.Close()
		var out []execlog.Entry
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var en execlog.Entry
			if err := json.Unmarshal(sc.Bytes(), &en); err != nil {
				e.t.Fatalf("exec log: %v", err)
			}
			out = append(out, en)
		}
		return out
	}
}

// TestE2ETokensReachNoChild: with every token of a real job set, no child
// gets the API or ingest token, only buildkite-agent gets the agent's
// token, and the Hugging Face token goes only where a download happens.
func TestE2ETokensReachNoChild(t *testing.T) {
	t.Parallel()
	const name = "e2e-tokens"
	e := newE2E(t, name, tinyRecipe(name, 1))
	read := e.execLog()
	tokens := map[string]string{
		"BUILDKITE_AGENT_ACCESS_TOKEN": "agent-token-value",
		"BUILDKITE_API_TOKEN":          "api-token-value",
		"BENCHKITE_INGEST_TOKEN":       "ingest-token-value",
		"MY_API_KEY":                   "some-key-value",
		"HF_TOKEN":                     "hf-token-value",
	}
	for k, v := range tokens {
		e.setenv(k, v)
	}
	e.setenv("FAKE_VLLM_TOKEN_DELAY", "20ms")
	r := e.start("--health-timeout", "5m")
	// While it runs, the runner's own environ and command line hold no
	// token (it re-executed itself without them) and it is not dumpable.
	e.waitFor("running vllm bench serve", r, func() bool { return e.findProc("vllm bench serve") != 0 })
	pid := strconv.Itoa(r.cmd.Process.Pid)
	for _, f := range []string{"environ", "cmdline"} {
		data, err := os.ReadFile("/proc/" + pid + "/" + f)
		if err != nil {
			if os.Geteuid() != 0 {
				continue // not dumpable: not readable by its uid
			}
			t.Fatalf("read the runner's %s as root: %v", f, err)
		}
		for k, v := range tokens {
			if strings.Contains(string(data), v) {
				t.Errorf("the runner's /proc/%s/%s holds %s", pid, f, k)
			}
		}
	}
	if st, err := os.Stat("/proc/" + pid + "/environ"); err == nil {
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 {
			t.Errorf("the runner's /proc files belong to uid %d: it is dumpable", sys.Uid)
		}
	}
	o := r.wait()
	checkCode(t, o, 0)
	entries := read()
	seen := map[string]bool{}
	for _, en := range entries {
		prog := filepath.Base(en.Argv[0])
		if len(en.Argv) > 1 {
			prog += " " + en.Argv[1]
		}
		seen[prog] = true
		env := strings.Join(en.Env, "\n")
		for _, v := range []string{"api-token-value", "ingest-token-value", "some-key-value"} {
			if strings.Contains(env, v) {
				t.Errorf("%s got a token it must not hold (%s)", prog, v)
			}
		}
		agent := filepath.Base(en.Argv[0]) == "buildkite-agent"
		if strings.Contains(env, "agent-token-value") != agent {
			t.Errorf("%s: holds the agent token = %v, want %v", prog, !agent, agent)
		}
		if agent && strings.Contains(env, "hf-token-value") {
			t.Errorf("%s got the HF token", prog)
		}
		if !agent && strings.Contains(env, "BUILDKITE_BUILD_URL=") {
			t.Errorf("%s got the job's Buildkite variables", prog)
		}
		if (prog == "vllm serve" || prog == "vllm bench") && !strings.Contains(env, "HF_TOKEN=hf-token-value") {
			t.Errorf("%s lacks the HF token it downloads with", prog)
		}
	}
	for _, want := range []string{"vllm serve", "vllm bench", "lm_eval --model", "buildkite-agent annotate"} {
		if !seen[want] {
			t.Errorf("no %q among the started stand-ins %v", want, seen)
		}
	}
}

// TestE2EPlanIsWhatRunStarts: `runner plan` and `runner run` start the
// same processes, in the same order, with the same argv.
func TestE2EPlanIsWhatRunStarts(t *testing.T) {
	t.Parallel()
	const name = "e2e-plan-run"
	e := newE2E(t, name, tinyRecipe(name, 3))
	read := e.execLog()
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 0)
	var started []string
	for _, en := range read() {
		started = append(started, shell.Join(en.Argv))
	}

	planned := planArgvs(e.plan("--health-timeout", "5m"))
	// The version query of tools from PATH runs the real python3, which
	// records nothing; every stand-in does.
	planned = slices.DeleteFunc(planned, func(p string) bool { return strings.HasPrefix(p, "python3 -c 'import sys") })
	// So does the server's Python, which the pytest step asks (and, had
	// it no pytest, would install into).
	planned = slices.DeleteFunc(planned, func(p string) bool { return strings.HasPrefix(p, serverPy.venvBin+"/python ") })
	// The annotation's style is chosen after the run; the plan says which.
	for i, p := range planned {
		planned[i] = strings.Replace(p, "--style 'success|warning|error'", "--style success", 1)
	}
	if len(planned) == 0 || strings.Join(planned, "\n") != strings.Join(started, "\n") {
		t.Errorf("plan and run differ\nplanned:\n%s\nstarted:\n%s", strings.Join(planned, "\n"), strings.Join(started, "\n"))
	}
}

// planArgvs are the numbered commands of a plan, each with the lines of
// an argument that spans several (a script), without its env and notes.
func planArgvs(plan string) []string {
	// A script's blank lines are part of it; blank lines after the
	// command are not (an argv never ends in a newline: it is quoted).
	var out []string
	inCmd := false
	end := func() {
		if inCmd {
			out[len(out)-1] = strings.TrimRight(out[len(out)-1], "\n")
		}
		inCmd = false
	}
	for _, line := range strings.Split(plan, "\n") {
		num, argv, ok := strings.Cut(line, ". ")
		switch {
		case ok && num != "" && strings.TrimLeft(num, "0123456789") == "":
			end()
			out = append(out, argv)
			inCmd = true
		case strings.HasPrefix(line, "     env ") || strings.HasPrefix(line, "     # "):
			end()
		case inCmd:
			out[len(out)-1] += "\n" + line
		}
	}
	end()
	return out
}

// plan runs `runner plan recipe.yaml --port <port> args...` in the job's
// directory and environment and returns what it printed.
func (e *e2e) plan(args ...string) string {
	e.t.Helper()
	argv := append([]string{"plan", "recipe.yaml", "--port", strconv.Itoa(e.port)}, args...)
	cmd := exec.Command(e.bin, argv...)
	cmd.Dir = e.dir
	cmd.Env = e.environ()
	out, err := cmd.Output()
	e.read.addText(string(out))
	if err != nil {
		e.t.Fatalf("runner plan: %v\n%s", err, out)
	}
	return string(out)
}

// TestPipelineModelCodeReadsNoToken: the runner runs as the agent starts
// it, under a parent that keeps every token of the job in its
// environment for as long as the job runs (buildkite-agent's bootstrap
// and the job's shell do). The processes that run model code (vllm
// serve, vllm bench serve, lm_eval) each read every /proc/*/environ and
// open every /proc/*/mem they can when they start: confined, they find
// no token and open no other process's memory, the runner's included,
// though the test runs as root (CAP_SYS_PTRACE among its capabilities,
// as the AMD pods have). With --unconfined the same scan finds the
// tokens in the parent's environment: the test would see a leak.
func TestPipelineModelCodeReadsNoToken(t *testing.T) {
	t.Parallel()
	requireLinux(t)
	tokens := map[string]string{
		"BUILDKITE_AGENT_ACCESS_TOKEN": "agent-token-z9y8x7",
		"BUILDKITE_API_TOKEN":          "api-token-w6v5u4",
		"BENCHKITE_INGEST_TOKEN":       "ingest-token-t3s2",
		"SECOND_API_TOKEN":             "second-api-token-r1q0",
	}
	native := func(t *testing.T, name string) *e2e { return newE2E(t, name, tinyRecipe(name, 1)) }
	run := func(t *testing.T, name string, newJob func(*testing.T, string) *e2e, extra ...string) (scans map[string]string, parentPid int) {
		t.Helper()
		e := newJob(t, name)
		for k, v := range tokens {
			e.setenv(k, v)
		}
		scanDir := filepath.Join(e.dir, "scans")
		if err := os.MkdirAll(scanDir, 0o755); err != nil {
			t.Fatal(err)
		}
		e.setenv("FAKE_PROC_SCAN_DIR", scanDir)
		// The parent stays while the runner runs, with the job's
		// environment, tokens and all, in its /proc/<pid>/environ.
		argv := append([]string{"-c", `"$@"; exit $?`, "bootstrap", e.bin, "run", "recipe.yaml", "--port", strconv.Itoa(e.port), "--health-timeout", "5m"}, extra...)
		cmd := exec.Command("/bin/sh", argv...)
		cmd.Dir = e.dir
		cmd.Env = e.environ()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("runner under its parent: %v\n%s", err, out)
		}
		entries, err := os.ReadDir(scanDir)
		if err != nil {
			t.Fatal(err)
		}
		scans = map[string]string{}
		for _, en := range entries {
			data, err := os.ReadFile(filepath.Join(scanDir, en.Name()))
			if err != nil {
				t.Fatal(err)
			}
			scans[en.Name()] = string(data)
		}
		return scans, cmd.Process.Pid
	}
	progOf := func(scan string) string {
		first, _, _ := strings.Cut(scan, "\n")
		for _, p := range []string{`"vllm" "serve"`, `"vllm" "bench"`, `/lm_eval"`} {
			if strings.Contains(first, p) {
				return strings.Trim(strings.ReplaceAll(p, `"`, ""), "/")
			}
		}
		return first
	}

	check := func(t *testing.T, scans map[string]string, want ...string) {
		t.Helper()
		seen := map[string]bool{}
		for file, scan := range scans {
			prog := progOf(scan)
			seen[prog] = true
			for k, v := range tokens {
				if strings.Contains(scan, v) {
					t.Errorf("%s (%s) read %s from another process", prog, file, k)
				}
			}
			if strings.Contains(scan, "\nmem ") {
				t.Errorf("%s (%s) opened another process's memory:\n%s", prog, file, scan)
			}
			self := ""
			for _, l := range strings.Split(scan, "\n") {
				if s, ok := strings.CutPrefix(l, "self "); ok {
					self = s
				}
			}
			if self == "" || !strings.Contains(scan, "\nenviron "+self+" ") {
				t.Errorf("%s (%s) could not read even its own environ: the scan shows nothing\n%s", prog, file, scan)
			}
		}
		for _, w := range want {
			if !seen[w] {
				t.Errorf("no scan by %s among %v", w, seen)
			}
		}
	}
	scans, _ := run(t, "e2e-confined", native)
	check(t, scans, "vllm serve", "vllm bench", "lm_eval")
	// On a docker host the server and the bench run in the container
	// (the stand-in's, which does not isolate: it gets no scan knob);
	// lm_eval runs on the host, confined.
	dockerScans, _ := run(t, "e2e-confined-docker", func(t *testing.T, name string) *e2e {
		e, _ := newDockerE2E(t, name, 1)
		return e
	})
	check(t, dockerScans, "lm_eval")

	control, parent := run(t, "e2e-unconfined", native, "--unconfined")
	for k := range tokens {
		found := false
		for _, scan := range control {
			found = found || strings.Contains(scan, fmt.Sprintf("\nenviron %d ", parent)) && strings.Contains(scan, tokens[k])
		}
		if !found {
			t.Errorf("unconfined, no scan found %s in the parent's (pid %d) environ: the test would not see a leak", k, parent)
		}
	}
}
