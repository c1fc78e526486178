package e2e

// The harness of the end-to-end tests: the runner binary run as a real
// process, in a scratch working directory, against the stand-in vllm,
// lm_eval and buildkite-agent programs (runner/standins, built by
// fakes/fakebin).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/fakebin"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Bounds, not measurements: they only keep a broken run from hanging the
// test binary. Speed is measured by BenchmarkFakeRun.
const (
	runBound   = 2 * time.Minute
	pollBound  = time.Minute
	goneBound  = 5 * time.Second
	pollPeriod = 20 * time.Millisecond
)

// markerEnv is set to a value unique to each run; every process the runner
// starts inherits it, which is how leftovers are found, whatever process
// group or parent they ended up with.
const markerEnv = "BENCHKITE_E2E_MARKER"

var (
	runnerOnce sync.Once
	runnerDir  string
	runnerBin  string
	runnerErr  error
)

// TestMain removes the runner binary built for the end-to-end tests; the
// test wrapper exits with m.Run's result.
func TestMain(m *testing.M) {
	m.Run()
	if runnerDir != "" {
		os.RemoveAll(runnerDir)
	}
	if serverPyDir != "" {
		os.RemoveAll(serverPyDir)
	}
	if pipVenvRoot != "" {
		os.RemoveAll(pipVenvRoot)
	}
}

// buildRunner builds this package's binary once per test binary, with the
// race detector when the tests have it, so that the real process is
// checked too.
func buildRunner(t testing.TB) string {
	t.Helper()
	requireLinux(t)
	runnerOnce.Do(func() {
		runnerDir, runnerErr = os.MkdirTemp("", "benchkite-e2e-runner-")
		if runnerErr != nil {
			return
		}
		runnerBin = filepath.Join(runnerDir, "runner")
		args := []string{"build", "-o", runnerBin}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "github.com/benchkite/benchkite/runner")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			runnerErr = fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	})
	if runnerErr != nil {
		t.Fatalf("build the runner: %v", runnerErr)
	}
	return runnerBin
}

// requireLinux: leftovers are found through /proc. CI runs Linux, so
// there a different system is a failure, not a skip.
func requireLinux(t testing.TB) {
	t.Helper()
	if runtime.GOOS == "linux" {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("the end-to-end tests need Linux (/proc), not %s", runtime.GOOS)
	}
	t.Skipf("the end-to-end tests need Linux (/proc), not %s", runtime.GOOS)
}

// freePort returns a loopback port nothing listens on right now.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// e2e is one recipe in one scratch working directory, run by the runner
// binary with the stand-ins first in PATH and a recording Buildkite agent.
type e2e struct {
	t      testing.TB
	bin    string
	dir    string // the job's working directory
	recipe string // recipe name
	port   int
	marker string
	env    map[string]string
	fakes  string // the stand-ins' directory
	// read are the logs of the runs, scanned with dir's files for what
	// a person must not read (checkReadable) when the test ends.
	read readers
}

// agent paths, relative to dir.
const (
	agentLogFile   = "agent/log.jsonl"
	agentArtifacts = "agent/artifacts"
	agentNotes     = "agent/annotations"
	vllmArgvLog    = "vllm-argv.jsonl"
)

// newE2E prepares a run of the recipe text, whose name is name, in a
// Buildkite job (the stand-in agent records what is published).
func newE2E(t testing.TB, name, recipe string) *e2e {
	t.Helper()
	bin := buildRunner(t)
	fakes := fakebin.Build(t)
	dir := t.TempDir()
	for _, d := range []string{agentArtifacts, agentNotes} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "recipe.yaml"), []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	checkoutProfiles(t, dir)
	server := defaultServerPython(t, fakes)
	e := &e2e{t: t, bin: bin, dir: dir, recipe: name, port: freePort(t), fakes: fakes}
	e.marker = fmt.Sprintf("%s-%d-%d", name, os.Getpid(), time.Now().UnixNano())
	// A minimal environment: the tests may themselves run in a Buildkite
	// job, whose BUILDKITE_* variables must not reach this one.
	e.env = map[string]string{
		"PATH":                         server.bin + string(os.PathListSeparator) + fakes + string(os.PathListSeparator) + os.Getenv("PATH"),
		imagePathEnv:                   server.venvBin,
		"HOME":                         dir,
		"TMPDIR":                       os.TempDir(),
		markerEnv:                      e.marker,
		"FAKE_LMEVAL_DOCS":             "10",
		"FAKE_VLLM_ARGV_LOG":           filepath.Join(dir, vllmArgvLog),
		"FAKE_AGENT_LOG":               filepath.Join(dir, agentLogFile),
		"FAKE_AGENT_ARTIFACTS":         filepath.Join(dir, agentArtifacts),
		"FAKE_AGENT_ANNOTATIONS":       filepath.Join(dir, agentNotes),
		"BUILDKITE":                    "true",
		"BUILDKITE_AGENT_ACCESS_TOKEN": "agent-access-token",
		"BUILDKITE_JOB_ID":             "0190b1e4-0000-4000-8000-" + fmt.Sprintf("%012d", e.port),
		"BUILDKITE_BUILD_ID":           "0190b1e4-1111-4000-8000-000000000042",
		"BUILDKITE_BUILD_NUMBER":       "42",
		"BUILDKITE_BUILD_URL":          "https://buildkite.com/benchkite/benchkite/builds/42",
		"BUILDKITE_STEP_KEY":           "recipe:" + name,
		"BUILDKITE_BRANCH":             "main",
		"BUILDKITE_SOURCE":             "schedule",
	}
	t.Cleanup(func() { e.killLeftovers() })
	t.Cleanup(func() { checkReadable(t, dir, e.read.text()...) })
	return e
}

// setenv sets NAME=value pairs for the run; an empty value unsets.
func (e *e2e) setenv(kv ...string) {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(e.env, kv[i])
			continue
		}
		e.env[kv[i]] = kv[i+1]
	}
}

// secrets gives the stand-in agent's `secret get` these secrets.
func (e *e2e) secrets(s map[string]string) {
	e.t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		e.t.Fatal(err)
	}
	path := filepath.Join(e.dir, "agent", "secrets.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		e.t.Fatal(err)
	}
	e.setenv("FAKE_AGENT_SECRETS", path)
}

// environ is the job's environment. The stand-ins' knobs and the marker
// reach the runner's children only as the runner's --pass-env lets them
// (BENCHKITE_PASS_ENV); every other child variable is the runner's choice.
// The tools come from PATH: the stand-in lm_eval is there.
func (e *e2e) environ() []string {
	var out, pass []string
	for k, v := range e.env {
		out = append(out, k+"="+v)
		if strings.HasPrefix(k, "FAKE_") || k == markerEnv {
			pass = append(pass, k)
		}
	}
	sort.Strings(pass)
	if _, ok := e.env["BENCHKITE_PASS_ENV"]; !ok {
		out = append(out, "BENCHKITE_PASS_ENV="+strings.Join(pass, ","))
	}
	if _, ok := e.env["BENCHKITE_TOOLS"]; !ok {
		out = append(out, "BENCHKITE_TOOLS=path")
	}
	return out
}

// results is the recipe's results directory.
func (e *e2e) results(elem ...string) string {
	return filepath.Join(append([]string{e.dir, "results", e.recipe}, elem...)...)
}

// runnerProc is a runner process.
type runnerProc struct {
	e      *e2e
	cmd    *exec.Cmd
	stdout *lineLog
	stderr *lineLog
	done   chan struct{}
}

// start starts `runner run recipe.yaml --port <port> args...`; with port
// 0, no --port: the runner picks the job's port itself.
func (e *e2e) start(args ...string) *runnerProc {
	e.t.Helper()
	argv := []string{"run", "recipe.yaml"}
	if e.port != 0 {
		argv = append(argv, "--port", strconv.Itoa(e.port))
	}
	argv = append(argv, args...)
	cmd := exec.Command(e.bin, argv...)
	cmd.Dir = e.dir
	cmd.Env = e.environ()
	s := &runnerProc{e: e, cmd: cmd, stdout: &lineLog{}, stderr: &lineLog{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	e.read.add(s.stdout, s.stderr)
	if err := cmd.Start(); err != nil {
		e.t.Fatalf("start runner: %v", err)
	}
	go func() {
		_ = cmd.Wait()
		close(s.done)
	}()
	e.t.Cleanup(func() {
		select {
		case <-s.done:
		default:
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	return s
}

// outcome is how a runner process ended.
type outcome struct {
	code   int
	stdout string
	stderr string
	state  *os.ProcessState
}

// wait waits, within runBound, for the runner to exit.
func (s *runnerProc) wait() outcome {
	s.e.t.Helper()
	return s.waitWithin(runBound)
}

// waitWithin waits, within bound, for the runner to exit.
func (s *runnerProc) waitWithin(bound time.Duration) outcome {
	s.e.t.Helper()
	select {
	case <-s.done:
	case <-time.After(bound):
		_ = s.cmd.Process.Kill()
		<-s.done
		s.e.t.Fatalf("runner still running after %s; killed it. Output:\n%s\n%s", bound, s.stdout.String(), s.stderr.String())
	}
	o := outcome{code: s.cmd.ProcessState.ExitCode(), stdout: s.stdout.String(), stderr: s.stderr.String(), state: s.cmd.ProcessState}
	if strings.Contains(o.stderr, "WARNING: DATA RACE") {
		s.e.t.Errorf("the runner process reported a data race:\n%s", o.stderr)
	}
	return o
}

// run runs the runner to its end.
func (e *e2e) run(args ...string) outcome {
	e.t.Helper()
	return e.start(args...).wait()
}

// lineLog is an io.Writer that keeps every line with its arrival time.
type lineLog struct {
	mu      sync.Mutex
	partial []byte
	lines   []timedLine
	all     bytes.Buffer
}

type timedLine struct {
	at   time.Time
	text string
}

func (l *lineLog) Write(p []byte) (int, error) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.lines = append(l.lines, timedLine{now, string(l.partial[:i])})
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}

// first returns the arrival time of the first line containing s.
func (l *lineLog) first(s string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line.text, s) {
			return line.at, true
		}
	}
	return time.Time{}, false
}

// lastLines returns the last n lines of out.
func lastLines(out string, n int) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// checkLastLines fails unless the last n lines of the log contain every
// string in want.
func checkLastLines(t testing.TB, o outcome, n int, want ...string) {
	t.Helper()
	tail := lastLines(o.stdout, n)
	for _, w := range want {
		if !strings.Contains(tail, w) {
			t.Errorf("the log's last %d lines lack %q:\n%s", n, w, tail)
		}
	}
}

// summary reads the run's summary.json.
func (e *e2e) summary() summary.Summary {
	e.t.Helper()
	s, err := summary.ReadFile(e.results("summary.json"))
	if err != nil {
		e.t.Fatalf("read summary: %v", err)
	}
	return s
}

// phaseStatuses maps each phase of s to its status.
func phaseStatuses(s summary.Summary) map[string]string {
	out := map[string]string{}
	for _, p := range s.Phases {
		out[p.Name] = p.Status
	}
	return out
}

// phaseError returns the error recorded for a phase.
func phaseError(s summary.Summary, name string) string {
	if p := s.Phase(name); p != nil {
		return p.Error
	}
	return ""
}

// agentCall is one invocation the stand-in agent recorded.
type agentCall struct {
	Argv  []string          `json:"argv"`
	Stdin string            `json:"stdin"`
	Env   map[string]string `json:"env"`
}

// agentCalls returns what the stand-in agent was asked to do, in order.
func (e *e2e) agentCalls() []agentCall {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.dir, agentLogFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	var calls []agentCall
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var c agentCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			e.t.Fatalf("agent log line %q: %v", sc.Text(), err)
		}
		calls = append(calls, c)
	}
	if err := sc.Err(); err != nil {
		e.t.Fatal(err)
	}
	return calls
}

// agentCommands lists the agent calls as "annotate", "artifact upload", ...
func agentCommands(calls []agentCall) []string {
	var out []string
	for _, c := range calls {
		name := strings.Join(c.Argv[1:2], "")
		if len(c.Argv) > 2 && (name == "artifact" || name == "secret") {
			name += " " + c.Argv[2]
		}
		out = append(out, name)
	}
	return out
}

// annotation returns the body and style the stand-in agent holds for the
// recipe's annotation context.
func (e *e2e) annotation() (body, style string) {
	e.t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, agentNotes, e.recipe+".md"))
	if err != nil {
		e.t.Fatalf("no annotation published: %v", err)
	}
	s, err := os.ReadFile(filepath.Join(e.dir, agentNotes, e.recipe+".style"))
	if err != nil {
		e.t.Fatalf("annotation without style: %v", err)
	}
	return string(b), strings.TrimSpace(string(s))
}

// checkAnnotation checks the style and that the body holds every string.
func (e *e2e) checkAnnotation(style string, want ...string) {
	e.t.Helper()
	body, got := e.annotation()
	if got != style {
		e.t.Errorf("annotation style = %q, want %q", got, style)
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			e.t.Errorf("annotation lacks %q:\n%s", w, body)
		}
	}
}

// checkUploaded fails unless the stand-in agent received each of the
// results files (paths relative to the results directory).
func (e *e2e) checkUploaded(names ...string) {
	e.t.Helper()
	for _, n := range names {
		if _, err := os.Stat(filepath.Join(e.dir, agentArtifacts, "results", e.recipe, n)); err != nil {
			e.t.Errorf("%s was not uploaded: %v", n, err)
		}
	}
}

// serverStarts returns the argv of every `vllm serve` the stand-in
// recorded.
func (e *e2e) serverStarts() [][]string {
	e.t.Helper()
	data, err := os.ReadFile(filepath.Join(e.dir, vllmArgvLog))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	var out [][]string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue // created, its first line not written yet
		}
		var argv []string
		if err := json.Unmarshal([]byte(line), &argv); err != nil {
			e.t.Fatalf("vllm argv log line %q: %v", line, err)
		}
		out = append(out, argv)
	}
	return out
}

// liveProc is a live process that carries a run's marker.
type liveProc struct {
	pid     int
	state   string
	cmdline string
}

// descendants scans /proc for live (not zombie) processes carrying the
// run's marker in their environment.
func (e *e2e) descendants() []liveProc {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		e.t.Fatalf("scan /proc: %v", err)
	}
	needle := []byte(markerEnv + "=" + e.marker + "\x00")
	var out []liveProc
	for _, d := range entries {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(append(env, 0), needle) {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // gone meanwhile
		}
		// The state follows the command name, which is in parentheses
		// and may itself hold ") ".
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		fields := strings.Fields(string(rest))
		if len(fields) == 0 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		out = append(out, liveProc{pid: pid, state: fields[0], cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))})
	}
	return out
}

// checkNoLeftovers fails if any process the run started is still alive.
// A process on its way out gets goneBound to finish dying.
func (e *e2e) checkNoLeftovers() {
	e.t.Helper()
	deadline := time.Now().Add(goneBound)
	for {
		left := e.descendants()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			var b strings.Builder
			for _, p := range left {
				fmt.Fprintf(&b, "\n  pid %d (%s): %s", p.pid, p.state, p.cmdline)
			}
			e.t.Errorf("processes left behind by the runner:%s", b.String())
			return
		}
		time.Sleep(pollPeriod)
	}
}

// killLeftovers kills, by pid, whatever the run left behind.
func (e *e2e) killLeftovers() {
	for _, p := range e.descendants() {
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
}

// waitFor polls cond until it holds, failing the test after pollBound.
func (e *e2e) waitFor(what string, s *runnerProc, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(pollBound)
	for !cond() {
		select {
		case <-s.done:
			e.t.Fatalf("runner exited while waiting for %s; output:\n%s", what, s.stdout.String())
		default:
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("no %s after %s; output:\n%s", what, pollBound, s.stdout.String())
		}
		time.Sleep(pollPeriod)
	}
}

// findProc returns the pid of a live descendant whose command line holds
// every word, or 0.
func (e *e2e) findProc(words ...string) int {
	for _, p := range e.descendants() {
		all := true
		for _, w := range words {
			all = all && strings.Contains(p.cmdline, w)
		}
		if all {
			return p.pid
		}
	}
	return 0
}

// tinyHead begins every stand-in recipe: one MI355X GPU (the native
// runtime) and the tiny model, served with serveArgs when there are any.
func tinyHead(name, serveArgs string) string {
	head := fmt.Sprintf("name: %s\ngpu: MI355X\nnum_gpus: 1\nvllm:\n  model: benchkite/tiny-model\n", name)
	if serveArgs != "" {
		head += "  serve_args: " + serveArgs + "\n"
	}
	return head
}

// shortBench is a bench config the stand-ins run in about a second, an
// item of vllm_bench.configs; settings of its own may follow it.
func shortBench(name string) string {
	return fmt.Sprintf(`    - name: %s
      backend: openai
      dataset: random
      input_len: 16
      output_len: 8
      num_prompts: 8
      max_concurrency: 2
`, name)
}

// gsm8kTask is a small gsm8k, an item of lm_eval.tasks.
const gsm8kTask = `    - name: gsm8k
      num_fewshot: 2
      model_args:
        num_concurrent: 4
        max_gen_toks: 64
`

// tinyRecipe is a recipe small enough to run in a second on the
// stand-ins: one bench config with reps repetitions and a gsm8k task.
func tinyRecipe(name string, reps int) string {
	return tinyHead(name, "") + "lm_eval:\n  tasks:\n" + gsm8kTask +
		"vllm_bench:\n  configs:\n" + shortBench("short") + fmt.Sprintf("      repetitions: %d\n", reps)
}

// checkoutProfiles puts the repository's agents/profiles.yaml in dir, as
// the job's checkout has it: the runner reads it from there by default.
func checkoutProfiles(t testing.TB, dir string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(testutil.ModuleRoot(t), "agents", "profiles.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agents", "profiles.yaml"), src, 0o644); err != nil {
		t.Fatal(err)
	}
}
