package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/testutil"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/fakebin"
	"github.com/google/go-cmp/cmp"
)

// dispatch runs a docker command in process (for what fails before a
// process would start) and returns its status and output.
func dispatch(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	d := newDaemon(func(k string) string { return env[k] }, &stdout, &stderr)
	code := d.main(args)
	return code, stdout.String(), stderr.String()
}

func TestRejects(t *testing.T) {
	t.Parallel()
	run := func(flags ...string) []string {
		return append(append([]string{"run", "-d", "--rm", "--name", "cc"}, flags...), "vllm/vllm-openai:nightly", "m", "--port", "8000", "--host", "0.0.0.0")
	}
	pub := []string{"-p", "127.0.0.1:8000:8000"}
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{name: "unknown flag", args: run("--bogus"), code: 125, msg: "unknown flag: --bogus\n\nUsage:  docker run [OPTIONS] IMAGE [COMMAND] [ARG...]\n\nRun 'docker run --help' for more information\n"},
		{name: "unknown shorthand", args: run("-Z"), code: 125, msg: "unknown shorthand flag: 'Z' in -Z"},
		{name: "flag without value", args: []string{"run", "--name"}, code: 125, msg: "flag needs an argument: --name"},
		{name: "no image", args: []string{"run", "-d"}, code: 1, msg: "docker: 'docker run' requires at least 1 argument"},
		{name: "bad publish", args: run("-p", "127.0.0.1:x:8000"), code: 125, msg: "docker: invalid hostPort: x\n\nRun 'docker run --help' for more information\n"},
		{name: "bad publish address", args: run("-p", "300.1.1.1:8000:8000"), code: 125, msg: "docker: "},
		{name: "bad long publish", args: run("-p", "target"), code: 125, msg: "docker: "},
		{name: "bad ulimit", args: run("--ulimit=nofile=65536:1"), code: 125, msg: `invalid argument "nofile=65536:1" for "--ulimit" flag: ulimit soft limit must be less than or equal to hard limit: 65536 > 1`},
		{name: "unknown ulimit", args: run("--ulimit=files=1"), code: 125, msg: `invalid argument "files=1" for "--ulimit" flag: invalid ulimit type: files`},
		{name: "empty env name", args: run("-e", "=x"), code: 125, msg: `invalid argument "=x" for "-e, --env" flag: invalid environment variable: =x`},
		{name: "empty label", args: run("--label", "=x"), code: 125, msg: `invalid label '=x': empty name`},
		{name: "bad gpus", args: run("--gpus", "count=x"), code: 125, msg: `invalid count (x): value must be either "all" or an integer`},
		{name: "bad shm size", args: run("--shm-size", "1q"), code: 125, msg: `invalid argument "1q" for "--shm-size" flag: invalid suffix: 'q'`},
		{name: "bad device mode", args: run("--device", "/dev/null:/dev/x:rwx"), code: 125, msg: "docker: bad mode specified: rwx"},
		{name: "relative device", args: run("--device", "/dev/null:dev"), code: 125, msg: "docker: dev is not an absolute path"},
		{name: "missing device", args: run(append(pub, "--device=/dev/no-such-device")...), code: 125, msg: `docker: Error response from daemon: error gathering device information while adding custom device "/dev/no-such-device": no such file or directory`},
		{name: "bad security opt", args: run("--security-opt", "seccomp"), code: 125, msg: `docker: invalid --security-opt: "seccomp"`},
		{name: "unknown security opt", args: run(append(pub, "--security-opt", "foo=bar")...), code: 125, msg: `docker: Error response from daemon: invalid --security-opt 2: "foo=bar"`},
		{name: "bad ipc", args: run(append(pub, "--ipc=hots")...), code: 125, msg: "docker: Error response from daemon: invalid IPC mode: hots"},
		{name: "unknown capability", args: run(append(pub, "--cap-add", "SYS_PTRAC")...), code: 125, msg: `invalid CapAdd: unknown capability: "CAP_SYS_PTRAC"`},
		{name: "bad name", args: []string{"run", "-d", "--name", "a b", "img"}, code: 125, msg: "docker: Error response from daemon: Invalid container name (a b)"},
		{name: "one-letter name", args: []string{"run", "-d", "--name", "c", "img"}, code: 125, msg: "docker: Error response from daemon: Invalid container name (c), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed"},
		{name: "bad image", args: []string{"run", "-d", "Vllm/Image"}, code: 125, msg: "docker: invalid reference format: repository name (Image) must be lowercase"},
		{name: "rm with restart", args: run("--restart", "always"), code: 125, msg: "conflicting options: cannot specify both --restart and --rm"},
		{name: "bad pull", args: run("--pull", "sometimes"), code: 125, msg: `invalid pull option: 'sometimes'`},
		{name: "bad stop timeout", args: run("--stop-timeout", "x"), code: 125, msg: `invalid argument "x" for "--stop-timeout" flag`},
		{name: "real flag not emulated", args: run("--cpus", "2"), code: 125, msg: "fake docker: docker run --cpus is a real option, but this stand-in does not emulate it"},
		{name: "real flag, bad value, not emulated", args: run("--cpus", "x"), code: 125, msg: `invalid argument "x" for "--cpus" flag`},
		{name: "attached", args: []string{"run", "--rm", "img"}, code: 125, msg: "fake docker: docker run without -d"},
		{name: "bind elsewhere", args: run("-v", "/tmp:/data"), code: 125, msg: "fake docker: -v /tmp:/data: containers run on the host's filesystem"},
		{name: "relative volume target", args: run("-v", "cache:data"), code: 125, msg: "mount path must be absolute"},
		{name: "unpublished server", args: run("-p", "127.0.0.1:9000:8000"), code: 125, msg: "fake docker: the server's port 8000/tcp is not published as 127.0.0.1:8000:8000"},
		{name: "server on container loopback", args: []string{"run", "-d", "-p", "8000:8000", "img", "m", "--host", "127.0.0.1"}, code: 125, msg: "fake docker: the server binds 127.0.0.1 inside the container"},
		{name: "exec without command", args: []string{"exec", "c"}, code: 1, msg: "docker: 'docker exec' requires at least 2 arguments"},
		{name: "exec unknown flag", args: []string{"exec", "--env-files", "x", "c", "ls"}, code: 125, msg: "unknown flag: --env-files\n\nUsage:  docker exec [OPTIONS] CONTAINER COMMAND [ARG...]"},
		{name: "logs two containers", args: []string{"logs", "-f", "a", "b"}, code: 1, msg: "docker: 'docker logs' requires 1 argument"},
		{name: "logs since", args: []string{"logs", "--since", "1m", "a"}, code: 125, msg: "fake docker: docker logs --since is a real option"},
		{name: "stop bad timeout", args: []string{"stop", "-t", "ten", "c"}, code: 125, msg: `invalid argument "ten" for "-t, --timeout" flag`},
		{name: "stop both timeouts", args: []string{"stop", "-t", "1", "--time", "2", "c"}, code: 1, msg: "conflicting options: cannot specify both --timeout and --time"},
		{name: "rm without container", args: []string{"rm", "-f"}, code: 1, msg: "docker: 'docker rm' requires at least 1 argument"},
		{name: "ps argument", args: []string{"ps", "-q", "x"}, code: 1, msg: "docker: 'docker ps' accepts no arguments"},
		{name: "ps bad filter", args: []string{"ps", "-q", "--filter", "label"}, code: 125, msg: "bad format of filter (expected name=value)"},
		{name: "ps unknown filter", args: []string{"ps", "-aq", "--filter", "colour=red"}, code: 1, msg: "Error response from daemon: invalid filter 'colour'"},
		{name: "inspect bad template", args: []string{"inspect", "-f", "{{.State.Running", "c"}, code: 64, msg: "template parsing error: "},
		{name: "unknown command", args: []string{"rum"}, code: 1, msg: "docker: unknown command: docker rum\n\nRun 'docker --help' for more information"},
		{name: "command not emulated", args: []string{"pull", "img"}, code: 1, msg: "fake docker: docker pull is a real command"},
		{name: "global option", args: []string{"--context", "x", "ps"}, code: 125, msg: "fake docker: global option --context"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := dispatch(t, map[string]string{"HOME": t.TempDir()}, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.msg) {
				t.Errorf("docker %q = %d %q, want %d with %q", tt.args, code, stderr, tt.code, tt.msg)
			}
		})
	}
}

func TestPublishSpecs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []string
		want []portBinding
	}{
		{in: []string{"127.0.0.1:8000:8000"}, want: []portBinding{{HostIP: "127.0.0.1", HostPort: "8000", ContainerPort: "8000/tcp"}}},
		{in: []string{"9000:8000/udp"}, want: []portBinding{{HostPort: "9000", ContainerPort: "8000/udp"}}},
		{in: []string{"8000"}, want: []portBinding{{ContainerPort: "8000/tcp"}}},
		{in: []string{"published=8001,target=8000"}, want: []portBinding{{HostPort: "8001", ContainerPort: "8000/tcp"}}},
		{in: []string{"[::1]:8000:8000"}, want: []portBinding{{HostIP: "::1", HostPort: "8000", ContainerPort: "8000/tcp"}}},
	}
	for _, tt := range tests {
		got, err := publishSpecs(tt.in)
		if err != nil {
			t.Errorf("publishSpecs(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(got, tt.want); diff != "" {
			t.Errorf("publishSpecs(%q) diff (-got +want):\n%s", tt.in, diff)
		}
	}
}

func TestParseVolume(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    volume
		wantErr string
	}{
		{in: "/mnt/hf:/mnt/hf", want: volume{source: "/mnt/hf", target: "/mnt/hf", bind: true}},
		{in: "benchkite-hf-cache:/root/.cache/huggingface", want: volume{source: "benchkite-hf-cache", target: "/root/.cache/huggingface"}},
		{in: "/data", want: volume{target: "/data"}},
		{in: "/a:/a:ro", want: volume{source: "/a", target: "/a", bind: true}},
		{in: "/a:/a:rx", wantErr: "invalid mode: rx"},
		{in: "a/b:/c", wantErr: "includes invalid characters for a local volume name"},
		{in: "/a:/b:/c:ro", wantErr: "too many colons"},
	}
	for _, tt := range tests {
		got, err := parseVolume(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseVolume(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseVolume(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(got, tt.want, cmp.AllowUnexported(volume{})); diff != "" {
			t.Errorf("parseVolume(%q) diff (-got +want):\n%s", tt.in, diff)
		}
	}
}

// harness runs the built stand-ins as processes with one state directory.
type harness struct {
	t    *testing.T
	bin  string
	home string
	env  []string
	dir  string // where docker runs; the test's directory when empty
}

func newHarness(t *testing.T, extra ...string) *harness {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	dir := fakebin.Build(t)
	home := t.TempDir()
	h := &harness{t: t, bin: filepath.Join(dir, fakebin.Docker), home: home,
		env: append([]string{"HOME=" + home, "PATH=" + dir + ":/usr/bin:/bin", "BARE=from-docker"}, extra...)}
	t.Cleanup(h.killAll)
	return h
}

// docker runs one command to its end.
func (h *harness) docker(args ...string) (int, string, string) {
	h.t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Env, cmd.Dir = h.env, h.dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil && cmd.ProcessState == nil {
		h.t.Fatalf("docker %q: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// dockerIn runs one command with stdin given, and returns its stdout.
func (h *harness) dockerIn(stdin string, args ...string) string {
	h.t.Helper()
	cmd := exec.Command(h.bin, args...)
	cmd.Env = h.env
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("docker %q: %v: %s", args, err, stderr.String())
	}
	return string(out)
}

// must runs a command that has to succeed and returns its stdout.
func (h *harness) must(args ...string) string {
	h.t.Helper()
	code, out, errOut := h.docker(args...)
	if code != 0 {
		h.t.Fatalf("docker %q = %d: %s", args, code, errOut)
	}
	return out
}

// killAll kills, by process group, whatever the containers still run.
func (h *harness) killAll() {
	st := &store{root: filepath.Join(h.home, ".fake-docker")}
	for _, c := range st.all() {
		if s := st.status(c.ID); s.Pid > 0 {
			_ = syscall.Kill(-s.Pid, syscall.SIGKILL)
		}
		killExecs(st, c.ID)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// runServer starts a server container and returns its ID.
func (h *harness) runServer(name, port string, flags ...string) string {
	h.t.Helper()
	args := append([]string{"run", "-d", "--name", name, "--label", "benchkite.recipe=" + name, "-e", "A=1", "-e", "BARE", "-e", "UNSET_HERE",
		"-p", "127.0.0.1:" + port + ":" + port}, flags...)
	args = append(args, "vllm/vllm-openai:nightly", "m", "--port", port, "--host", "0.0.0.0")
	return strings.TrimSpace(h.must(args...))
}

// eventually polls cond within a bound; the bound only keeps a broken
// stand-in from hanging the test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestContainerLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	port := freePort(t)
	id := h.runServer("life", port, "--rm")
	if len(id) != 64 {
		t.Fatalf("docker run printed %q, want a container ID", id)
	}
	if got := h.must("ps", "-aq", "--filter", "label=benchkite.recipe=life"); got != id[:12]+"\n" {
		t.Errorf("ps by label = %q, want %q", got, id[:12])
	}
	if got := h.must("ps", "-aq", "--filter", "label=benchkite.recipe=other"); got != "" {
		t.Errorf("ps by another label = %q, want nothing", got)
	}
	if got := h.must("inspect", "-f", "{{.State.Running}}", "life"); got != "true\n" {
		t.Errorf("inspect running = %q, want true", got)
	}

	// The name is taken while the container exists.
	code, _, stderr := h.docker("run", "-d", "--rm", "--name", "life", "-p", "127.0.0.1:1:1", "img", "m", "--port", "1")
	want := fmt.Sprintf("docker: Error response from daemon: Conflict. The container name \"/life\" is already in use by container \"%s\". You have to remove (or rename) that container to be able to reuse that name.\n\nRun 'docker run --help' for more information\n", id)
	if code != 125 || stderr != want {
		t.Errorf("second run = %d %q, want 125 %q", code, stderr, want)
	}

	// exec sees the container's environment plus its own -e, nothing of
	// docker's own but what was passed by name.
	out := h.must("exec", "-e", "X=2", "-e", "A=3", "life", "env")
	var env []string
	for _, kv := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, "HOSTNAME=") {
			env = append(env, kv)
		}
	}
	if diff := cmp.Diff(env, []string{"HOME=" + h.home, "BARE=from-docker", "X=2", "A=3"}); diff != "" {
		t.Errorf("exec env diff (-got +want):\n%s", diff)
	}
	// -i hands the command docker's stdin; without it, it reads nothing.
	if out := h.dockerIn("lock text\n", "exec", "-i", "life", "cat"); out != "lock text\n" {
		t.Errorf("exec -i cat printed %q, want its stdin", out)
	}
	if out := h.dockerIn("lock text\n", "exec", "life", "cat"); out != "" {
		t.Errorf("exec cat without -i printed %q, want nothing", out)
	}
	if code, _, _ := h.docker("exec", "life", "false"); code != 1 {
		t.Errorf("exec false = %d, want its status 1", code)
	}
	if code, _, stderr := h.docker("exec", "life", "no-such-tool"); code != 126 || !strings.Contains(stderr, `exec: "no-such-tool": executable file not found in $PATH`) {
		t.Errorf("exec of a missing command = %d %q", code, stderr)
	}

	// logs -f follows until the container ends, then exits 0.
	logs := exec.Command(h.bin, "logs", "-f", "life")
	logs.Env = h.env
	var lout testutil.SyncBuffer
	logs.Stdout, logs.Stderr = &lout, &lout
	if err := logs.Start(); err != nil {
		t.Fatal(err)
	}
	// Following (else --rm could remove the container before logs finds
	// it) and listening.
	eventually(t, "server started in the log", func() bool { return strings.Contains(lout.String(), "Application startup complete") })
	if c, err := net.Dial("tcp", "127.0.0.1:"+port); err != nil {
		t.Errorf("the published port does not reach the server: %v", err)
	} else {
		c.Close()
	}
	if got := h.must("stop", "-t", "5", "life"); got != "life\n" {
		t.Errorf("stop printed %q", got)
	}
	if err := logs.Wait(); err != nil {
		t.Errorf("logs -f: %v", err)
	}
	if !strings.Contains(lout.String(), "Shutting down") {
		t.Errorf("logs lack the graceful shutdown:\n%s", lout.String())
	}

	// --rm: gone once it ended.
	eventually(t, "container removed", func() bool { code, _, _ := h.docker("inspect", "life"); return code == 1 })
	if code, _, stderr := h.docker("inspect", "-f", "{{.State.Running}}", "life"); code != 1 || stderr != "error: no such object: life\n" {
		t.Errorf("inspect after removal = %d %q", code, stderr)
	}
	if code, _, stderr := h.docker("exec", "life", "env"); code != 1 || stderr != "Error response from daemon: No such container: life\n" {
		t.Errorf("exec after removal = %d %q", code, stderr)
	}
	if code, out, stderr := h.docker("rm", "-f", "life"); code != 0 || out != "" || stderr != "" {
		t.Errorf("rm -f of a removed container = %d %q %q, want silent success", code, out, stderr)
	}
	if code, _, stderr := h.docker("rm", "life"); code != 1 || stderr != "Error response from daemon: No such container: life\n" {
		t.Errorf("rm of a removed container = %d %q", code, stderr)
	}
	if code, _, stderr := h.docker("stop", "life"); code != 1 || stderr != "Error response from daemon: No such container: life\n" {
		t.Errorf("stop of a removed container = %d %q", code, stderr)
	}
}

// --entrypoint replaces `vllm serve`, the arguments after the image are
// its own, and the image's PATH starts with FAKE_DOCKER_IMAGE_PATH.
func TestEntrypointAndImagePath(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "FAKE_DOCKER_IMAGE_PATH=/opt/venv/bin")
	port := freePort(t)
	gate := filepath.Join(t.TempDir(), "go")
	h.must("run", "-d", "--rm", "--name", "gated", "-p", "127.0.0.1:"+port+":"+port, "--entrypoint", "sh", "vllm/vllm-openai:nightly",
		"-c", `f=$1; shift; while [ ! -e "$f" ]; do sleep 0.05; done; exec "$@"`, "gate", gate, "vllm", "serve", "m", "--port", port, "--host", "0.0.0.0")
	if out := h.must("exec", "gated", "sh", "-c", "echo $PATH"); !strings.HasPrefix(out, "/opt/venv/bin:") {
		t.Errorf("the container's PATH is %q, want /opt/venv/bin first", out)
	}
	if got := h.must("inspect", "-f", "{{json .Config.Entrypoint}} {{.Path}}", "gated"); got != `["sh"] sh`+"\n" {
		t.Errorf("entrypoint = %q", got)
	}
	h.must("exec", "gated", "touch", gate)
	eventually(t, "the server behind the gate", func() bool {
		_, stdout, stderr := h.docker("logs", "gated")
		return strings.Contains(stdout+stderr, "Application startup complete")
	})
	h.must("rm", "-f", "gated")
}

func TestStoppedContainerStays(t *testing.T) {
	t.Parallel()
	// The entrypoint fails during load; without --rm the container stays,
	// exited with its status.
	h := newHarness(t, "FAKE_DOCKER_IMAGE_ENV=FAKE_VLLM_EXIT_DURING_LOAD", "FAKE_VLLM_EXIT_DURING_LOAD=3")
	id := h.runServer("dies", freePort(t))
	code, out, stderr := h.docker("logs", "-f", "dies")
	if code != 0 || !strings.Contains(out+stderr, "CUDA out of memory") {
		t.Errorf("logs -f = %d, want 0 and the traceback:\n%s%s", code, out, stderr)
	}
	if got := h.must("inspect", "-f", "{{.State.Running}} {{.State.ExitCode}} {{.State.Status}}", "dies"); got != "false 3 exited\n" {
		t.Errorf("inspect = %q, want false 3 exited", got)
	}
	if got := h.must("ps", "-q", "--filter", "label=benchkite.recipe=dies"); got != "" {
		t.Errorf("ps without -a lists the exited container: %q", got)
	}
	if got := h.must("ps", "-aq", "--filter", "label=benchkite.recipe=dies"); got != id[:12]+"\n" {
		t.Errorf("ps -a = %q", got)
	}
	if code, _, stderr := h.docker("exec", "dies", "env"); code != 1 || stderr != "Error response from daemon: container "+id+" is not running\n" {
		t.Errorf("exec in an exited container = %d %q", code, stderr)
	}
	if got := h.must("stop", "dies"); got != "dies\n" {
		t.Errorf("stop of an exited container printed %q", got)
	}
	if got := h.must("rm", "dies"); got != "dies\n" {
		t.Errorf("rm printed %q", got)
	}
	if got := h.must("ps", "-aq"); got != "" {
		t.Errorf("ps -aq after rm = %q", got)
	}
}

func TestStopEscalatesAndExecDiesWithContainer(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "FAKE_DOCKER_IMAGE_ENV=FAKE_VLLM_IGNORE_SIGTERM", "FAKE_VLLM_IGNORE_SIGTERM=true")
	port := freePort(t)
	id := h.runServer("stubborn", port)
	// A server takes its signals in hand as it starts; the stop below is
	// for a server that has started, as the runner's is (it is ready).
	eventually(t, "server listening", func() bool {
		c, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	// A signal ends docker exec, not the command it started.
	ex := exec.Command(h.bin, "exec", "stubborn", "sleep", "600")
	ex.Env = h.env
	if err := ex.Start(); err != nil {
		t.Fatal(err)
	}
	st := &store{root: filepath.Join(h.home, ".fake-docker")}
	var sleepPid int
	eventually(t, "exec started", func() bool {
		matches, _ := filepath.Glob(filepath.Join(st.dir(id), "execs", "*", "pid"))
		if len(matches) == 1 {
			data, _ := os.ReadFile(matches[0])
			sleepPid, _ = strconv.Atoi(string(data))
		}
		return sleepPid > 0
	})
	if err := ex.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	_ = ex.Wait()
	if got := ex.ProcessState.ExitCode(); got != 143 {
		t.Errorf("docker exec after SIGTERM exited %d, want 143", got)
	}
	if !alive(sleepPid) {
		t.Fatalf("the exec'd command ended with docker exec")
	}

	// The server ignores SIGTERM: stop kills after the timeout, and
	// everything in the container dies.
	if got := h.must("stop", "-t", "1", "stubborn"); got != "stubborn\n" {
		t.Errorf("stop printed %q", got)
	}
	if got := h.must("inspect", "-f", "{{.State.ExitCode}}", "stubborn"); got != "137\n" {
		t.Errorf("exit code = %q, want 137 (SIGKILL)", got)
	}
	eventually(t, "exec'd command killed", func() bool { return !alive(sleepPid) })
}

func TestPortInUse(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	code, _, stderr := h.docker("run", "-d", "--rm", "--name", "busy", "-p", "127.0.0.1:"+port+":"+port, "img", "m", "--port", port)
	if code != 125 || !strings.Contains(stderr, "failed to bind host port 127.0.0.1:"+port+"/tcp: address already in use") {
		t.Errorf("run on a used port = %d %q", code, stderr)
	}
	if got := h.must("ps", "-aq"); got != "" {
		t.Errorf("the failed container stayed: %q", got)
	}
}

// A container sees the job's files only where -v mounts them: exec of a
// command naming another path of the job's directory is refused, as a
// real container would not find the host's file there (or would write
// into its own layer, lost with it). Paths elsewhere are the image's.
func TestExecRefusesUnmountedJobPaths(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.dir = t.TempDir()
	mounted, other := filepath.Join(h.dir, "results", "bench"), filepath.Join(h.dir, "results", "aiperf-x")
	for _, d := range []string{mounted, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	h.runServer("mounts", port, "-v", mounted+":"+mounted)
	if code, _, errOut := h.docker("exec", "mounts", "ls", mounted); code != 0 {
		t.Errorf("exec ls of a mounted path = %d: %s", code, errOut)
	}
	if code, _, errOut := h.docker("exec", "mounts", "ls", "/tmp"); code != 0 {
		t.Errorf("exec ls of an image path = %d: %s", code, errOut)
	}
	for _, args := range [][]string{{"ls", other}, {"aiperf", "profile", "--output-artifact-dir=" + other}} {
		code, _, errOut := h.docker(append([]string{"exec", "mounts"}, args...)...)
		if code != 126 || !strings.Contains(errOut, other+" is a path of the job's files that no -v mounts into container mounts") {
			t.Errorf("exec %q = %d: %s; want 126 naming the unmounted path", args, code, errOut)
		}
	}
}
