package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The supervisors stand for the daemon's part of a container (containerd's
// shim): they own the processes, keep their output and exit status, and
// end a container's other processes when its entrypoint ends, as the end
// of a PID namespace does.

// internal runs this binary as a supervisor: "container ID" or "exec
// CONTAINER-ID EXEC-ID".
func internal(args []string) int {
	st, err := newStore(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Signals aimed at a docker command must not end the daemon.
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM, syscall.SIGPIPE)
	report := os.NewFile(3, "report")
	switch {
	case os.Getenv(internalEnv) == "container" && len(args) == 2 && args[0] == "container":
		return superviseContainer(st, args[1], report)
	case os.Getenv(internalEnv) == "exec" && len(args) == 3 && args[0] == "exec":
		return superviseExec(st, args[1], args[2], report)
	}
	fmt.Fprintf(os.Stderr, "fake docker: bad supervisor call %q\n", args)
	return 1
}

// logEntry is one line of a container's log, as docker's json-file driver
// keeps it.
type logEntry struct {
	Log    string    `json:"log"`
	Stream string    `json:"stream"`
	Time   time.Time `json:"time"`
}

// logWriter appends entries to the log file, one JSON line each.
type logWriter struct {
	mu sync.Mutex
	f  *os.File
}

func (w *logWriter) write(stream, text string) {
	line, _ := json.Marshal(logEntry{Log: text, Stream: stream, Time: time.Now().UTC()})
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.f.Write(append(line, '\n'))
}

// collect reads r to its end, handing each line (and a last partial one)
// to emit.
func collect(r io.Reader, emit func(string)) {
	buf := make([]byte, 32<<10)
	var partial []byte
	for {
		n, err := r.Read(buf)
		partial = append(partial, buf[:n]...)
		for {
			i := strings.IndexByte(string(partial), '\n')
			if i < 0 {
				break
			}
			emit(string(partial[:i+1]))
			partial = partial[i+1:]
		}
		if err != nil {
			if len(partial) > 0 {
				emit(string(partial))
			}
			return
		}
	}
}

// exitCode is docker's status for a process: its code, or 128+signal.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// lookPath resolves a command against the container's PATH.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if st, err := os.Stat(name); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return name, nil
		}
		return "", fmt.Errorf("exec: %q: stat %s: no such file or directory", name, name)
	}
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			for _, dir := range filepath.SplitList(p) {
				path := filepath.Join(dir, name)
				if st, err := os.Stat(path); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
					return path, nil
				}
			}
		}
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

// startLogged starts argv in a process group of its own, with its output
// going through pipes to out; it returns the process and a channel closed
// once both pipes have been read to their end.
func startLogged(path string, argv, env []string, dir string, stdin io.Reader, out func(stream, text string)) (*exec.Cmd, <-chan struct{}, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: env, Dir: dir, Stdin: stdin, Stdout: outW, Stderr: errW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		return nil, nil, err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for stream, r := range map[string]*os.File{"stdout": outR, "stderr": errR} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.Close()
			collect(r, func(text string) { out(stream, text) })
		}()
	}
	go func() { wg.Wait(); close(done) }()
	return cmd, done, nil
}

func superviseContainer(st *store, id string, report *os.File) int {
	fail := func(err error) int {
		fmt.Fprintf(report, "error: %v\n", err)
		report.Close()
		return 1
	}
	ctr, err := st.load(id)
	if err != nil {
		return fail(err)
	}
	dir := st.dir(id)
	logf, err := os.OpenFile(filepath.Join(dir, "log.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fail(err)
	}
	defer logf.Close()
	lw := &logWriter{f: logf}
	argv := append(append([]string{}, ctr.Entrypoint...), ctr.Args...)
	path, err := lookPath(argv[0], ctr.Env)
	if err == nil {
		var cmd *exec.Cmd
		var drained <-chan struct{}
		cmd, drained, err = startLogged(path, argv, ctr.Env, filepath.Join(dir, "rootfs"), nil, lw.write)
		if err == nil {
			return runContainer(st, ctr, cmd, drained, report)
		}
	}
	// As the daemon says when the entrypoint cannot start; the
	// container stays, created but exited.
	_ = st.writeStatus(id, status{ExitCode: 127, FinishedAt: time.Now()})
	if ctr.AutoRemove {
		st.remove(id)
	}
	return fail(fmt.Errorf("failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: %v: unknown", err))
}

func runContainer(st *store, ctr *container, cmd *exec.Cmd, drained <-chan struct{}, report *os.File) int {
	pid := cmd.Process.Pid
	_ = st.writeStatus(ctr.ID, status{Running: true, Pid: pid, ShimPid: os.Getpid(), StartedAt: time.Now()})
	fmt.Fprintln(report, "ok")
	report.Close()

	_ = cmd.Wait()
	code := exitCode(cmd.ProcessState)
	// The entrypoint was the container's PID 1: everything else in the
	// container dies with it.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	killExecs(st, ctr.ID)
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
	}
	prev := st.status(ctr.ID)
	_ = st.writeStatus(ctr.ID, status{Pid: 0, ShimPid: os.Getpid(), ExitCode: code, StartedAt: prev.StartedAt, FinishedAt: time.Now()})
	if ctr.AutoRemove {
		st.remove(ctr.ID)
	}
	return 0
}

// execConfig is one `docker exec`, in <container>/execs/<id>/config.json.
type execConfig struct {
	Cmd         []string `json:"cmd"`
	Env         []string `json:"env"`
	Interactive bool     `json:"interactive,omitempty"`
}

func (s *store) execDir(cid, eid string) string { return filepath.Join(s.dir(cid), "execs", eid) }

// killExecs kills the process groups of the container's execs.
func killExecs(st *store, cid string) {
	entries, _ := os.ReadDir(filepath.Join(st.dir(cid), "execs"))
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(st.execDir(cid, e.Name()), "pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// superviseExec runs one exec's command, copying its output to this
// process's stdout and stderr (pipes to the docker exec command) for as
// long as anyone reads them, and reports its exit status on fd 3.
func superviseExec(st *store, cid, eid string, report *os.File) int {
	defer report.Close()
	dir := st.execDir(cid, eid)
	data, err := os.ReadFile(filepath.Join(dir, "config.json"))
	var ec execConfig
	if err == nil {
		err = json.Unmarshal(data, &ec)
	}
	if err != nil {
		fmt.Fprintf(report, "error: %v\n", err)
		return 1
	}
	path, err := lookPath(ec.Cmd[0], ec.Env)
	if err != nil {
		fmt.Fprintf(report, "error: OCI runtime exec failed: exec failed: unable to start container process: %v: unknown\n", err)
		return 1
	}
	var mu sync.Mutex
	out := func(stream, text string) {
		mu.Lock()
		defer mu.Unlock()
		w := os.Stdout
		if stream == "stderr" {
			w = os.Stderr
		}
		_, _ = io.WriteString(w, text) // the reader may be gone; keep draining
	}
	// The supervisor's stdin is the docker command's under -i.
	var stdin io.Reader
	if ec.Interactive {
		stdin = os.Stdin
	}
	cmd, drained, err := startLogged(path, ec.Cmd, ec.Env, filepath.Join(st.dir(cid), "rootfs"), stdin, out)
	if err != nil {
		fmt.Fprintf(report, "error: OCI runtime exec failed: exec failed: unable to start container process: %v: unknown\n", err)
		return 1
	}
	_ = os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	// A container that ended meanwhile takes its execs with it.
	if !st.status(cid).Running {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	_ = cmd.Wait()
	code := exitCode(cmd.ProcessState)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
	}
	fmt.Fprintf(report, "exit %d\n", code)
	return 0
}
