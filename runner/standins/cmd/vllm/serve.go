package main

import (
	"context"
	"encoding/json"
	"errors"
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
	sk, err := readServeKnobs(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "vllm serve: %v\n", err)
		return 1
	}
	if sk.argvLog != "" {
		if err := appendArgv(sk.argvLog, append([]string{"vllm", "serve"}, args...)); err != nil {
			fmt.Fprintf(stderr, "vllm serve: %v\n", err)
			return 1
		}
	}
	a, err := parseServeArgs(args)
	if err != nil {
		fmt.Fprintf(stderr, "usage: vllm serve [model_tag] [options]\nvllm serve: error: %v\n", err)
		return 2
	}
	cfg, err := serverConfig(sk, a, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "vllm serve: %s: %v\n", envBFCLData, err)
		return 1
	}

	// Every line of the API server's process carries its prefix, as
	// vLLM 0.26.0 writes it; the engine's carry the engine's.
	prefix := fmt.Sprintf("(APIServer pid=%d) ", os.Getpid())
	log := &vlog{w: newPrefixWriter(&lockedWriter{w: stdout}, prefix)}
	errOut := newPrefixWriter(&lockedWriter{w: stderr}, prefix)
	cfg.AccessLog = log.w
	logResolved(log, a, cfg)

	// The engine loads the model in a process of its own; the server
	// listens once it is ready, as vLLM does.
	eng, code, ok := loadEngine(ctx, getenv, engineConfig{
		Model: a.model, MaxModelLen: cfg.MaxModelLen, SpecTokens: cfg.NumSpeculativeTokens,
		Load: cfg.StartupDelay, ExitCode: sk.exitDuringLoad, ExitMessage: sk.exitMessage,
	}, errOut, stdout, stderr)
	if !ok {
		return code
	}
	cfg.StartupDelay = 0
	if f := getenv(envPidFile); f != "" {
		if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintf(stderr, "vllm serve: %v\n", err)
			eng.kill()
			return 1
		}
	}
	addr := net.JoinHostPort(loopbackHost(a.host), strconv.Itoa(a.port))
	return serveUntilDone(ctx, openai.NewServer(cfg), addr, getenv, eng, log, errOut, stderr)
}

// serveKnobs are the FAKE_VLLM_* knobs of a server.
type serveKnobs struct {
	// base is the server's configuration the knobs set.
	base           openai.Config
	exitDuringLoad int
	exitMessage    string
	argvLog        string
	noSpeculation  bool
}

// readServeKnobs reads the server's knobs, failing on the first bad value.
func readServeKnobs(getenv func(string) string) (serveKnobs, error) {
	k := &knobs{getenv: getenv}
	sk := serveKnobs{
		base: openai.Config{
			Accuracy:     k.float(envAccuracy, 1),
			TokenDelay:   k.duration(envTokenDelay, 0),
			StartupDelay: k.duration(envStartupDelay, 0),
			Faults: openai.Faults{
				DieAfterRequests:       k.int(envDieAfterRequests, 0),
				UnhealthyAfterRequests: k.int(envUnhealthyAfter, 0),
				NeverHealthy:           k.bool(envNeverHealthy),
			},
		},
		exitDuringLoad: k.int(envExitDuringLoad, 0),
		exitMessage:    k.string(envExitMessage, defaultExitMessage),
		argvLog:        getenv(envArgvLog),
		noSpeculation:  k.bool(envNoSpeculation),
	}
	return sk, k.err
}

// serverConfig is the server's configuration: the knobs', the command
// line's model, length, speculation and tool calling, and the BFCL answers
// FAKE_VLLM_BFCL_DATA names.
func serverConfig(sk serveKnobs, a serveArgs, getenv func(string) string) (openai.Config, error) {
	cfg := sk.base
	cfg.Model, cfg.ServedModelNames, cfg.MaxModelLen = a.model, a.servedNames, a.maxModelLen
	cfg.NumSpeculativeTokens = a.speculativeTokens()
	cfg.AutoToolChoice, cfg.ToolCallParser = a.autoToolChoice, a.toolCallParser
	if dir := getenv(envBFCLData); dir != "" {
		answers, err := openai.LoadBFCLAnswers(dir)
		if err != nil {
			return openai.Config{}, err
		}
		cfg.ToolAnswers = answers
	}
	if sk.noSpeculation {
		// A server that took the flag and never drafted: vLLM
		// reports no acceptance then.
		cfg.NumSpeculativeTokens = 0
	}
	if cfg.MaxModelLen == 0 {
		cfg.MaxModelLen = openai.DefaultMaxModelLen
	}
	return cfg, nil
}

// logResolved logs what vLLM resolves before it loads the model.
func logResolved(log *vlog, a serveArgs, cfg openai.Config) {
	log.info("api_utils.py:273", "non-default args: %s", a.pythonRepr())
	log.info("model.py:623", "Resolved architecture: FakeForCausalLM")
	log.info("model.py:1788", "Using max model len %d", cfg.MaxModelLen)
	if n := cfg.NumSpeculativeTokens; n > 0 {
		log.info("speculative.py:612", "Speculative decoding enabled: method=%s, num_speculative_tokens=%d", orDefault(a.specMethod, "draft_model"), n)
	}
}

// loadEngine starts the engine and waits until it has loaded the model.
// ok is false when the server must end instead, with exit status code:
// stopped during the load, the engine failed, or it could not start.
func loadEngine(ctx context.Context, getenv func(string) string, ec engineConfig, errOut, stdout, stderr io.Writer) (eng *engine, code int, ok bool) {
	eng, err := startEngine(getenv, ec, stdout, stderr) // a file is inherited, as vLLM's engine inherits it
	if err != nil {
		fmt.Fprintf(stderr, "vllm serve: %v\n", err)
		return nil, 1, false
	}
	if err := eng.waitReady(ctx.Done()); err != nil {
		if errors.Is(err, errCanceled) {
			// Stopped during the load: the recordings show nothing
			// printed then.
			eng.kill()
			return nil, 0, false
		}
		<-eng.exited
		apiServerTraceback(errOut)
		return nil, max(ec.ExitCode, 1), false
	}
	return eng, 0, true
}

// serveUntilDone listens at addr and serves until cancelled (a clean
// shutdown) or until the server ends by itself (a dead engine).
func serveUntilDone(ctx context.Context, srv *openai.Server, addr string, getenv func(string) string, eng *engine, log *vlog, errOut, stderr io.Writer) int {
	if err := srv.Start(ctx, addr); err != nil {
		if ctx.Err() != nil {
			return shutdown(log, errOut, stderr, eng)
		}
		fmt.Fprintf(errOut, "ERROR %s [api_server.py:1916] %v\nOSError: [Errno 98] could not listen on %s\n", stamp(), err, addr)
		eng.kill()
		return 1
	}
	defer srv.Close()
	go plant(ctx, getenv(envPlantFrom), getenv(envPlantInto), func() bool { return srv.Stats().Requests > 0 })
	go rewrite(ctx, getenv(envRewriteInto), getenv(envRewriteScore))
	logListening(log, errOut, srv.Addr())

	select {
	case <-ctx.Done():
		srv.Close()
		return shutdown(log, errOut, stderr, eng)
	case <-srv.Done():
		if srv.Died() {
			fmt.Fprintf(errOut, "ERROR %s [core.py:720] EngineCore encountered a fatal error.\nvllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for the root cause.\n", stamp())
		}
		eng.kill()
		return 1
	}
}

// logListening logs the routes and uvicorn's start as vLLM does once it
// listens.
func logListening(log *vlog, errOut io.Writer, addr string) {
	log.info("api_server.py:673", "Supported tasks: ['generate']")
	log.info("api_server.py:677", "Starting vLLM server on http://%s", addr)
	log.info("launcher.py:37", "Available routes are:")
	for _, route := range []string{"/health, Methods: GET", "/ping, Methods: GET", "/ping, Methods: POST", "/version, Methods: GET", "/v1/models, Methods: GET", "/v1/completions, Methods: POST", "/v1/chat/completions, Methods: POST", "/metrics, Methods: GET"} {
		log.info("launcher.py:46", "Route: %s", route)
	}
	fmt.Fprintf(errOut, "INFO:     Started server process [%d]\nINFO:     Waiting for application startup.\nINFO:     Application startup complete.\n", os.Getpid())
}

// shutdown is vLLM 0.26.0's [shutdown] sequence after SIGTERM: the API
// server stops its engine (killing what is left of it), then uvicorn,
// and Python's resource tracker warns of a leaked semaphore.
func shutdown(log *vlog, errOut, stderr io.Writer, eng *engine) int {
	log.info("launcher.py:100", "[shutdown] API server: shutdown triggered")
	log.info("launcher.py:116", "[shutdown] API server: stopping engine client mode=abort timeout=0s")
	log.info("core_client.py:655", "[shutdown] MPClient: start timeout=0s")
	log.info("core_client.py:657", "[shutdown] MPClient: stopping engine manager")
	if eng.stop() {
		log.warning("utils.py:626", "[shutdown] Process manager: force killing remaining processes count=1")
	}
	log.info("core_client.py:659", "[shutdown] MPClient: engine manager stopped")
	log.info("core_client.py:660", "[shutdown] MPClient: cleaning up background resources")
	log.info("core_client.py:662", "[shutdown] MPClient: complete")
	log.info("launcher.py:125", "[shutdown] API server: engine client stopped")
	log.info("launcher.py:128", "[shutdown] API server: signalling HTTP server shutdown")
	log.info("launcher.py:149", "[shutdown] API server: shutting down FastAPI HTTP server")
	fmt.Fprint(errOut, "INFO:     Shutting down\nINFO:     Waiting for application shutdown.\nINFO:     Application shutdown complete.\n")
	io.WriteString(stderr, leakedSemaphore)
	return 0
}

// leakedSemaphore is what Python's resource tracker, a process without
// vLLM's prefix, prints as vLLM 0.26.0 ends.
const leakedSemaphore = "/usr/lib/python3.12/multiprocessing/resource_tracker.py:254: UserWarning: resource_tracker: There appear to be 1 leaked semaphore objects to clean up at shutdown\n" +
	"  warnings.warn('resource_tracker: There appear to be %d '\n"

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

func (l *vlog) info(src, format string, args ...any) { l.line("INFO", src, format, args...) }

func (l *vlog) warning(src, format string, args ...any) { l.line("WARNING", src, format, args...) }

func (l *vlog) errorf(src, format string, args ...any) { l.line("ERROR", src, format, args...) }

func (l *vlog) line(level, src, format string, args ...any) {
	fmt.Fprintf(l.w, "%s %s [%s] %s\n", level, stamp(), src, fmt.Sprintf(format, args...))
}

// prefixWriter starts every line with a process's prefix, as vLLM does
// for the output of each of its processes.
type prefixWriter struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  []byte
	midLine bool
}

func newPrefixWriter(w io.Writer, prefix string) *prefixWriter {
	return &prefixWriter{w: w, prefix: []byte(prefix)}
}

// Write writes p in one call to the writer below, so that lines of two
// processes interleave only whole.
func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, c := range b {
		if !p.midLine {
			out = append(out, p.prefix...)
			p.midLine = true
		}
		out = append(out, c)
		if c == '\n' {
			p.midLine = false
		}
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
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
