package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/openai"
)

// runServe imitates "vllm serve": log the start-up, load (wait), listen,
// serve until cancelled, and shut down cleanly.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	out := &lockedWriter{w: stdout}
	log := &vlog{w: out}

	k := &knobs{getenv: getenv}
	cfg := openai.Config{
		Accuracy:     k.float(envAccuracy, 1),
		TokenDelay:   k.duration(envTokenDelay, 0),
		StartupDelay: k.duration(envStartupDelay, 0),
		Faults: openai.Faults{
			DieAfterRequests:       k.int(envDieAfterRequests, 0),
			UnhealthyAfterRequests: k.int(envUnhealthyAfter, 0),
			NeverHealthy:           k.bool(envNeverHealthy),
		},
		AccessLog: out,
	}
	exitDuringLoad := k.int(envExitDuringLoad, 0)
	exitMessage := k.string(envExitMessage, defaultExitMessage)
	argvLog := getenv(envArgvLog)
	noSpeculation := k.bool(envNoSpeculation)
	if k.err != nil {
		fmt.Fprintf(stderr, "vllm serve: %v\n", k.err)
		return 1
	}
	if argvLog != "" {
		if err := appendArgv(argvLog, append([]string{"vllm", "serve"}, args...)); err != nil {
			fmt.Fprintf(stderr, "vllm serve: %v\n", err)
			return 1
		}
	}

	a, err := parseServeArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "usage: vllm serve [model_tag] [options]\nvllm serve: error: %v\n", err)
		return 2
	}
	cfg.Model, cfg.ServedModelNames, cfg.MaxModelLen = a.model, a.servedNames, a.maxModelLen
	cfg.NumSpeculativeTokens = a.speculativeTokens()
	cfg.AutoToolChoice, cfg.ToolCallParser = a.autoToolChoice, a.toolCallParser
	if dir := getenv(envBFCLData); dir != "" {
		if cfg.ToolAnswers, err = openai.LoadBFCLAnswers(dir); err != nil {
			fmt.Fprintf(stderr, "vllm serve: %s: %v\n", envBFCLData, err)
			return 1
		}
	}
	if noSpeculation {
		// A server that took the flag and never drafted: vLLM
		// reports no acceptance then.
		cfg.NumSpeculativeTokens = 0
	}
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = openai.DefaultMaxModelLen
	}

	log.info("api_server.py:1839", "vLLM API server version %s", openai.Version)
	log.info("utils.py:233", "non-default args: %s", a.pythonRepr())
	log.info("model.py:547", "Resolved architecture: FakeForCausalLM")
	log.info("model.py:1510", "Using max model len %d", cfg.MaxModelLen)
	if n := cfg.NumSpeculativeTokens; n > 0 {
		log.info("speculative.py:612", "Speculative decoding enabled: method=%s, num_speculative_tokens=%d", orDefault(a.specMethod, "draft_model"), n)
	}
	log.info("gpu_model_runner.py:2602", "Starting to load model %s...", a.model)

	if exitDuringLoad != 0 {
		if sleepCtx(ctx, cfg.StartupDelay) != nil {
			return shutdown(stderr)
		}
		fmt.Fprintf(stderr, "ERROR %s [core.py:708] EngineCore failed to start.\nTraceback (most recent call last):\n  File \"/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core.py\", line 699, in run_engine_core\n    engine_core = EngineCoreProc(*args, **kwargs)\n%s\nRuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}\n", stamp(), exitMessage)
		return exitDuringLoad
	}

	if f := getenv(envPidFile); f != "" {
		if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintf(stderr, "vllm serve: %v\n", err)
			return 1
		}
	}
	if err := startEngine(getenv, stderr); err != nil {
		fmt.Fprintf(stderr, "vllm serve: %v\n", err)
		return 1
	}
	srv := openai.NewServer(cfg)
	addr := net.JoinHostPort(loopbackHost(a.host), strconv.Itoa(a.port))
	if err := srv.Start(ctx, addr); err != nil {
		if ctx.Err() != nil {
			return shutdown(stderr)
		}
		fmt.Fprintf(stderr, "ERROR %s [api_server.py:1916] %v\nOSError: [Errno 98] could not listen on %s\n", stamp(), err, addr)
		return 1
	}
	defer srv.Close()
	go plant(ctx, getenv(envPlantFrom), getenv(envPlantInto), func() bool { return srv.Stats().Requests > 0 })
	go rewrite(ctx, getenv(envRewriteInto), getenv(envRewriteScore))
	log.info("default_loader.py:267", "Loading weights took %.2f seconds", cfg.StartupDelay.Seconds())
	log.info("api_server.py:1880", "Starting vLLM API server on http://%s", srv.Addr())
	log.info("launcher.py:36", "Available routes are:")
	for _, route := range []string{"/health, Methods: GET", "/ping, Methods: GET, POST", "/version, Methods: GET", "/v1/models, Methods: GET", "/v1/completions, Methods: POST", "/v1/chat/completions, Methods: POST", "/metrics, Methods: GET"} {
		log.info("launcher.py:44", "Route: %s", route)
	}
	fmt.Fprintf(stderr, "INFO:     Started server process [%d]\nINFO:     Waiting for application startup.\nINFO:     Application startup complete.\n", os.Getpid())

	select {
	case <-ctx.Done():
		srv.Close()
		return shutdown(stderr)
	case <-srv.Done():
		if srv.Died() {
			fmt.Fprintf(stderr, "ERROR %s [core.py:720] EngineCore encountered a fatal error.\nvllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n", stamp())
		}
		return 1
	}
}

func shutdown(stderr io.Writer) int {
	fmt.Fprintf(stderr, "INFO:     Shutting down\nINFO:     Waiting for application shutdown.\nINFO:     Application shutdown complete.\nINFO:     Finished server process [%d]\n", os.Getpid())
	return 0
}

// appendArgv appends one JSON array per start, so restarts are all visible.
func appendArgv(path string, argv []string) error {
	line, err := json.Marshal(argv)
	if err != nil {
		return fmt.Errorf("encode argv: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open argv log: %w", err)
	}
	if _, err := f.Write(append(line, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write argv log: %w", err)
	}
	return f.Close()
}

// loopbackHost keeps the stand-in on loopback: wildcard hosts (vLLM's
// default is to listen everywhere) become 127.0.0.1.
func loopbackHost(host string) string {
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		return "127.0.0.1"
	}
	return host
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// vlog writes lines in vLLM's log format.
type vlog struct{ w io.Writer }

func (l *vlog) info(src, format string, args ...any) {
	fmt.Fprintf(l.w, "INFO %s [%s] %s\n", stamp(), src, fmt.Sprintf(format, args...))
}

func stamp() string { return time.Now().Format("01-02 15:04:05") }

// lockedWriter serialises writes from the logger and the access log.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
