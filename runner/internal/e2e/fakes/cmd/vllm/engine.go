package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Engine-core stand-in. vLLM's API server starts its engine as separate
// processes (multiprocessing); FAKE_VLLM_ENGINE_ESCAPE makes `vllm serve`
// start one that leaves the server's process group ("group") or session
// ("session"), as a process may, to check that the runner still ends it.
const (
	envEngineEscape = "FAKE_VLLM_ENGINE_ESCAPE"
	// envEngineRole marks the re-executed child; it is not a knob.
	envEngineRole = "FAKE_VLLM_ENGINE_ROLE"
)

// startEngine starts the engine-core child when the knob asks for one.
func startEngine(getenv func(string) string, stderr io.Writer) error {
	mode := getenv(envEngineEscape)
	switch mode {
	case "":
		return nil
	case "group", "session":
	default:
		return fmt.Errorf("invalid %s=%q: want group or session", envEngineEscape, mode)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("engine core: %w", err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envEngineRole+"="+mode)
	cmd.Stderr = stderr // like vLLM's, it logs into the server's output
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("engine core: %w", err)
	}
	fmt.Fprintf(stderr, "INFO %s [core.py:86] EngineCore_DP0 pid=%d started\n", stamp(), cmd.Process.Pid)
	go cmd.Wait() //nolint:errcheck // reaped when it ends, if the server still runs
	return nil
}

// runEngine is the child: it leaves the group or session and waits for a
// signal, holding nothing but its place in the process table (as an engine
// would hold the GPUs).
func runEngine(mode string) int {
	var err error
	if mode == "session" {
		_, err = syscall.Setsid()
	} else {
		err = syscall.Setpgid(0, 0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "engine core: leave the %s: %v\n", mode, err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	<-sigs
	return 0
}

// killFromPidFile SIGKILLs the process whose pid the file holds (a server
// started with FAKE_VLLM_PID_FILE) and waits until it is gone or a
// zombie: a server that dies between two phases.
func killFromPidFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("kill server: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return fmt.Errorf("kill server: pid file %s: %w", path, err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill server: %w", err)
	}
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return nil
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}
