package fakebin

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/testutil"

	"github.com/benchkite/benchkite/runner/internal/rootcause"
	"github.com/google/go-cmp/cmp"
)

// The vllm stand-in is checked against what vLLM 0.26.0 printed on an
// H200 (the repository's testdata/vllm-0.26.0): a process tree, prefixed
// lines per process, the shutdown sequence, access lines.

func recordedLines(t *testing.T, name string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "..", "testdata", "vllm-0.26.0", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

// servedTree starts `vllm serve` in a process group of its own with its
// stdout and stderr in one stream, as the runner does.
func servedTree(t *testing.T, env ...string) (cmd *exec.Cmd, out *testutil.SyncBuffer, exited chan error) {
	t.Helper()
	bin := Build(t)
	cmd = exec.Command(filepath.Join(bin, VLLM), "serve", "m", "--port", "0")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out = &testutil.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd, out, exited
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// childrenOf lists the live processes whose parent is pid, with their
// process group.
func childrenOf(pid int) map[int]int {
	out := map[int]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
		if len(f) < 3 || f[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid == pid {
			pgrp, _ := strconv.Atoi(f[2])
			out[p] = pgrp
		}
	}
	return out
}

func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

var (
	pidRE   = regexp.MustCompile(`pid=\d+`)
	stampRE = regexp.MustCompile(`\d\d-\d\d \d\d:\d\d:\d\d`)
)

// shutdownLines are the [shutdown] lines and what follows uvicorn's
// "Shutting down", per process prefix, pids and times masked.
func shutdownLines(lines []string) map[string][]string {
	out := map[string][]string{}
	started := map[string]bool{}
	for _, l := range lines {
		key := ""
		if m := regexp.MustCompile(`^\((\w+) pid=\d+\) `).FindStringSubmatch(l); m != nil {
			key = m[1]
		}
		if strings.Contains(l, "[shutdown]") || strings.Contains(l, "Shutting down") {
			started[key] = true
		}
		if key == "" && strings.Contains(l, "resource_tracker") {
			started[key] = true
		}
		if started[key] {
			out[key] = append(out[key], stampRE.ReplaceAllString(pidRE.ReplaceAllString(l, "pid=N"), "MM-DD hh:mm:ss"))
		}
	}
	return out
}

func TestServeIsAProcessTreeLikeVLLM(t *testing.T) {
	cmd, out, exited := servedTree(t)
	var url string
	waitFor(t, "the server to listen", func() bool {
		m := listening.FindStringSubmatch(out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	// The engine is a child in the server's process group.
	kids := childrenOf(cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("vllm serve has children %v, want one engine", kids)
	}
	var engine int
	for pid, pgrp := range kids {
		engine = pid
		if pgrp != cmd.Process.Pid {
			t.Errorf("the engine is in process group %d, want the server's %d", pgrp, cmd.Process.Pid)
		}
	}
	for _, path := range []string{"/health", "/v1/models"} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// The runner's stop: SIGTERM to the group.
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("vllm serve after SIGTERM: %v, want status 0", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("vllm serve did not stop")
	}
	if alive(engine) {
		t.Errorf("the engine (pid %d) outlived its server", engine)
	}
	text := out.String()
	api, core := fmt.Sprintf("(APIServer pid=%d) ", cmd.Process.Pid), fmt.Sprintf("(EngineCore pid=%d) ", engine)
	for _, want := range []string{
		api + "INFO:     127.0.0.1:",
		`- "GET /health HTTP/1.1" 200 OK`,
		`- "GET /v1/models HTTP/1.1" 200 OK`,
		core + "INFO ",
		api + "INFO:     Application startup complete.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the output lacks %q:\n%s", want, text)
		}
	}
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if !strings.HasPrefix(l, api) && !strings.HasPrefix(l, core) && !strings.Contains(l, "resource_tracker") {
			t.Errorf("a line without a process prefix: %q", l)
		}
	}
	want := shutdownLines(recordedLines(t, "night-shutdown.server.log"))
	if diff := cmp.Diff(want, shutdownLines(strings.Split(strings.TrimSuffix(text, "\n"), "\n"))); diff != "" {
		t.Errorf("the shutdown sequence differs from vLLM 0.26.0's (-recorded +stand-in):\n%s", diff)
	}
}

// The API server SIGKILLed: the engine says it was told to stop and
// ends, as vLLM 0.26.0's did mid-bench; nothing is left.
func TestServeKilledLeavesNoEngine(t *testing.T) {
	cmd, out, exited := servedTree(t)
	waitFor(t, "the server to listen", func() bool { return listening.MatchString(out.String()) })
	kids := childrenOf(cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("vllm serve has children %v, want one engine", kids)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	for engine := range kids {
		waitFor(t, "the engine to end", func() bool { return !alive(engine) })
	}
	var recorded []string
	for _, l := range recordedLines(t, "server-killed-mid-bench.server.log") {
		if strings.HasPrefix(l, "(EngineCore") && strings.Contains(l, "[shutdown]") {
			recorded = append(recorded, l)
		}
	}
	waitFor(t, "the engine's shutdown lines", func() bool {
		return len(shutdownLines(strings.Split(out.String(), "\n"))["EngineCore"]) == len(recorded)
	})
	if diff := cmp.Diff(shutdownLines(recorded)["EngineCore"], shutdownLines(strings.Split(out.String(), "\n"))["EngineCore"]); diff != "" {
		t.Errorf("the engine's lines differ from vLLM 0.26.0's (-recorded +stand-in):\n%s", diff)
	}
}

// An engine that fails to start: the same root cause as vLLM 0.26.0's
// output gives, from the engine process, then the API server's
// RuntimeError.
func TestServeEngineFailsLikeVLLM(t *testing.T) {
	const msg = "ModuleNotFoundError: No module named 'flashinfer'"
	cmd, out, exited := servedTree(t, "FAKE_VLLM_EXIT_DURING_LOAD=1", "FAKE_VLLM_EXIT_MESSAGE="+msg)
	var engine int
	waitFor(t, "the engine", func() bool {
		for pid := range childrenOf(cmd.Process.Pid) {
			engine = pid
		}
		return engine != 0 || strings.Contains(out.String(), "EngineCore pid=")
	})
	select {
	case err := <-exited:
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("exit = %v, want status 1", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("vllm serve did not exit")
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	engineRE := regexp.MustCompile(`^\(EngineCore pid=\d+\) ` + regexp.QuoteMeta(msg) + `$`)
	if got := rootcause.Of(lines); !engineRE.MatchString(got) {
		t.Errorf("root cause = %q, want the engine's %q", got, msg)
	}
	if want := rootcause.Of(recordedLines(t, "engine-start-fails.server.log")); !engineRE.MatchString(want) {
		t.Errorf("the recording's root cause is %q", want)
	}
	if last := lines[len(lines)-1]; !regexp.MustCompile(`^\(APIServer pid=\d+\) RuntimeError: Engine core initialization failed. See root cause above.`).MatchString(last) {
		t.Errorf("last line = %q, want the API server's RuntimeError", last)
	}
}
