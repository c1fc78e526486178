package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
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

// Engine-core stand-in. vLLM's API server runs its engine in a separate
// process (multiprocessing), EngineCore, which loads the model, logs
// under its own "(EngineCore pid=M)" prefix into the server's output,
// and is ended by the API server at shutdown (or by the death of its
// parent). FAKE_VLLM_ENGINE_ESCAPE makes it leave the server's process
// group ("group") or session ("session") and ignore all that, as a
// process may, to check that the runner still ends it.
const (
	envEngineEscape = "FAKE_VLLM_ENGINE_ESCAPE"
	// envEngineRole marks the re-executed child ("core", or the escape
	// mode); envEngineConfig is its configuration. Neither is a knob.
	envEngineRole   = "FAKE_VLLM_ENGINE_ROLE"
	envEngineConfig = "FAKE_VLLM_ENGINE_CONFIG"
)

// engineConfig is what the API server hands its engine.
type engineConfig struct {
	Model       string        `json:"model"`
	MaxModelLen int           `json:"max_model_len"`
	SpecTokens  int           `json:"spec_tokens"`
	Load        time.Duration `json:"load"`
	// ExitCode, when not 0, makes the engine fail at the end of its load
	// with ExitMessage as the root cause.
	ExitCode    int    `json:"exit_code"`
	ExitMessage string `json:"exit_message"`
}

// Messages on the pipe from the engine to its API server.
const (
	msgReady   = "ready"
	msgStopped = "stopped"
)

// engine is the API server's handle on its engine process.
type engine struct {
	cmd     *exec.Cmd
	escaped bool
	msgs    chan string   // from the engine; closed when it closes the pipe
	exited  chan struct{} // the engine has been reaped
}

func (e *engine) alive() bool {
	select {
	case <-e.exited:
		return false
	default:
		return true
	}
}

// startEngine starts the engine process with the server's output.
func startEngine(getenv func(string) string, cfg engineConfig, stdout, stderr io.Writer) (*engine, error) {
	role := "core"
	switch mode := getenv(envEngineEscape); mode {
	case "":
	case "group", "session":
		role = mode
	default:
		return nil, fmt.Errorf("invalid %s=%q: want group or session", envEngineEscape, mode)
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("engine core: %w", err)
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("engine core: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("engine core: %w", err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envEngineRole+"="+role, envEngineConfig+"="+string(data))
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{w}
	if role == "core" {
		// vLLM's engine gets SIGTERM when its parent dies.
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("engine core: %w", err)
	}
	w.Close()
	e := &engine{cmd: cmd, escaped: role != "core", msgs: make(chan string, 4), exited: make(chan struct{})}
	go func() {
		defer close(e.msgs)
		defer r.Close()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			e.msgs <- sc.Text()
		}
	}()
	go func() {
		cmd.Wait() //nolint:errcheck // how it ended is seen in its output
		close(e.exited)
	}()
	return e, nil
}

// waitReady waits for the engine to finish loading: nil when it did, an
// error when it died first.
func (e *engine) waitReady(done <-chan struct{}) error {
	for {
		select {
		case m, ok := <-e.msgs:
			if !ok {
				return errors.New("engine core died during start-up")
			}
			if m == msgReady {
				return nil
			}
		case <-done:
			return errCanceled
		}
	}
}

var errCanceled = errors.New("canceled")

// stop ends the engine as vLLM's process manager does: SIGTERM, a moment
// for its own shutdown lines, then SIGKILL for what remains. It reports
// whether the engine had to be killed.
func (e *engine) stop() (killed bool) {
	if e.escaped || !e.alive() {
		return false
	}
	_ = e.cmd.Process.Signal(syscall.SIGTERM)
	timeout := time.After(time.Second)
wait:
	for {
		select {
		case m, ok := <-e.msgs:
			if !ok || m == msgStopped {
				break wait
			}
		case <-e.exited:
			return false
		case <-timeout:
			break wait
		}
	}
	if !e.alive() {
		return false
	}
	_ = e.cmd.Process.Kill()
	<-e.exited
	return true
}

// kill ends the engine at once, waiting until it is gone.
func (e *engine) kill() {
	if e.escaped || !e.alive() {
		return
	}
	_ = e.cmd.Process.Kill()
	<-e.exited
}

// runEngine is the engine process; role is "core" or an escape mode.
// An escaped engine leaves the group or session first, does not watch
// its parent, and ends only on a signal, as a process the API server
// lost track of would.
func runEngine(role string) int {
	escaped := role != "core"
	if escaped {
		if err := leaveGroup(role); err != nil {
			fmt.Fprintf(os.Stderr, "engine core: leave the %s: %v\n", role, err)
			return 1
		}
	}
	var cfg engineConfig
	if err := json.Unmarshal([]byte(os.Getenv(envEngineConfig)), &cfg); err != nil {
		fmt.Fprintf(os.Stderr, "engine core: %s: %v\n", envEngineConfig, err)
		return 1
	}
	toServer := os.NewFile(3, "engine-pipe")
	e := newEngineCore(cfg, escaped)
	if code, loaded := e.load(); !loaded {
		return code
	}
	fmt.Fprintln(toServer, msgReady)

	e.waitForStop()
	e.log.info("core.py:1313", "[shutdown] EngineCore: trigger received signal=SIGTERM")
	e.log.info("core.py:1432", "[shutdown] EngineCore: start mode=abort timeout=0s")
	e.log.info("core.py:1463", "[shutdown] EngineCore: request processing complete; starting resource teardown")
	e.log.info("core.py:1326", "[shutdown] EngineCore: exiting busy loop")
	if escaped {
		return 0
	}
	fmt.Fprintln(toServer, msgStopped)
	// Its parent ends it; without one it ends itself.
	<-e.orphaned
	return 0
}

// leaveGroup takes the engine out of the server's session ("session") or
// process group (any other escape mode).
func leaveGroup(role string) error {
	if role == "session" {
		_, err := syscall.Setsid()
		return err
	}
	return syscall.Setpgid(0, 0)
}

// engineCore is the running engine process: its configuration, its logs,
// and what stops it.
type engineCore struct {
	cfg      engineConfig
	log      *vlog
	errOut   io.Writer
	sigs     chan os.Signal
	orphaned chan struct{}
}

// newEngineCore starts watching for SIGTERM and SIGINT and, unless the
// engine escaped, for the death of its parent.
func newEngineCore(cfg engineConfig, escaped bool) *engineCore {
	parent := os.Getppid()
	e := &engineCore{cfg: cfg, sigs: make(chan os.Signal, 1), orphaned: make(chan struct{})}
	signal.Notify(e.sigs, syscall.SIGTERM, os.Interrupt)
	// A parent gone without a word (SIGKILL) is what Pdeathsig reports;
	// looking also covers a parent whose death the kernel did not signal.
	go func() {
		if escaped {
			return
		}
		for os.Getppid() == parent {
			time.Sleep(50 * time.Millisecond)
		}
		close(e.orphaned)
	}()
	prefix := fmt.Sprintf("(EngineCore pid=%d) ", os.Getpid())
	e.log = &vlog{w: newPrefixWriter(&lockedWriter{w: os.Stdout}, prefix)}
	e.errOut = newPrefixWriter(&lockedWriter{w: os.Stderr}, prefix)
	return e
}

// load loads the model, split as vLLM logs it, each time said the time
// taken. loaded is false when the engine must end instead, with exit
// status code: stopped during the load (0) or failed as
// FAKE_VLLM_EXIT_DURING_LOAD asks (1).
func (e *engineCore) load() (code int, loaded bool) {
	cfg := e.cfg
	spec := "None"
	if cfg.SpecTokens > 0 {
		spec = fmt.Sprintf("SpeculativeConfig(method='ngram', model=None, num_spec_tokens=%d)", cfg.SpecTokens)
	}
	e.log.info("core.py:116", "Initializing a V1 LLM engine (v%s) with config: model='%s', speculative_config=%s, tokenizer='%s', max_seq_len=%d", engineVersion, cfg.Model, spec, cfg.Model, cfg.MaxModelLen)
	e.log.info("model_runner.py:284", "Loading model from scratch...")
	weights, ok := e.phase(0.15)
	if !ok {
		return 0, false
	}
	e.log.info("default_loader.py:430", "Loading weights took %.2f seconds", weights.Seconds())
	rest, ok := e.phase(0.05)
	if !ok {
		return 0, false
	}
	e.log.info("model_runner.py:305", "Model loading took 0.01 GiB and %.6f seconds", (weights + rest).Seconds())
	if cfg.ExitCode != 0 {
		engineTraceback(e.log, e.errOut, cfg.ExitMessage)
		return 1, false
	}
	initStart := time.Now()
	compile, ok := e.phase(0.3)
	if !ok {
		return 0, false
	}
	e.log.info("monitor.py:53", "torch.compile took %.2f s in total", compile.Seconds())
	graphs, ok := e.phase(0.2)
	if !ok {
		return 0, false
	}
	e.log.info("model_runner.py:747", "Graph capturing finished in %.0f secs, took 0.15 GiB", graphs.Seconds())
	if _, ok := e.phase(0.3); !ok {
		return 0, false
	}
	e.log.info("core.py:340", "init engine (profile, create kv cache, warmup model) took %.2f s (compilation: %.2f s)", time.Since(initStart).Seconds(), compile.Seconds())
	return 0, true
}

// phase spends share of the load's time and returns how long it took;
// ok is false when a signal or the parent's death cut it short.
func (e *engineCore) phase(share float64) (took time.Duration, ok bool) {
	start := time.Now()
	t := time.NewTimer(time.Duration(float64(e.cfg.Load) * share))
	defer t.Stop()
	select {
	case <-t.C:
		return time.Since(start), true
	case <-e.sigs:
	case <-e.orphaned:
	}
	return 0, false
}

// waitForStop waits for a signal or the parent's death.
func (e *engineCore) waitForStop() {
	select {
	case <-e.sigs:
	case <-e.orphaned:
	}
}

// engineVersion is the vLLM release whose logs the stand-in follows.
const engineVersion = "0.26.0"

// engineTraceback is what vLLM 0.26.0's EngineCore printed when it
// failed to start (an image without flashinfer on an H200), with msg as
// the root cause; the frames are shortened.
func engineTraceback(log *vlog, errOut io.Writer, msg string) {
	log.errorf("core.py:1330", "    self.model_runner.load_model(load_dummy_weights=load_dummy_weights)")
	log.errorf("core.py:1330", "%s", msg)
	fmt.Fprintf(errOut, "Process EngineCore:\nTraceback (most recent call last):\n"+
		"  File \"/usr/lib/python3.12/multiprocessing/process.py\", line 314, in _bootstrap\n    self.run()\n"+
		"  File \"/venv/lib/python3.12/site-packages/vllm/v1/engine/core.py\", line 1299, in run_engine_core\n    engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)\n"+
		"  File \"/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_worker.py\", line 431, in load_model\n    self.model_runner.load_model(load_dummy_weights=load_dummy_weights)\n"+
		"%s\n", msg)
	// torch's warning as the engine process ends: never the cause.
	fmt.Fprintf(os.Stderr, "[rank0]:[W%s ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group() was not called before program exit, which can leak resources. For more info, please see https://pytorch.org/docs/stable/distributed.html#shutdown (function operator())\n", glogStamp())
}

// apiServerTraceback is what the API server raised when its engine died
// during start-up (frames shortened).
func apiServerTraceback(errOut io.Writer) {
	fmt.Fprint(errOut, "Traceback (most recent call last):\n"+
		"  File \"/venv/bin/vllm\", line 8, in <module>\n    sys.exit(main())\n"+
		"  File \"/venv/lib/python3.12/site-packages/vllm/v1/engine/utils.py\", line 1272, in wait_for_engine_startup\n    raise RuntimeError(\n"+
		"RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n")
}

// glogStamp is torch's C++ log time: "1202 07:49:19.795354059".
func glogStamp() string { return time.Now().Format("0102 15:04:05.000000000") }

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
