package e2e

import (
	"bytes"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkFakeRun times whole runs on the stand-ins. Each iteration is a
// full run of a few seconds; run it with -benchtime=1x. Metrics:
//
//	happy:        ms from the server turning ready (/health 200, polled
//	              here every 2 ms) to its first bench request; the runner's
//	              CPU time and peak RSS, both as wait4 reports them (the
//	              runner and the children it waited for) and sampled from
//	              /proc for the runner alone.
//	dead-server:  ms from the server's last words to the runner reporting
//	              the failure, for an exit during load and mid-bench.
//	sigterm:      ms from SIGTERM to the runner and every child gone, for
//	              a server that stops on SIGTERM, one that needs the
//	              SIGKILL after --grace 1s, and the worst case under the
//	              default --grace 10s (nothing stops on SIGTERM, an engine
//	              left the server's session), which the cancel budget must
//	              keep under the agent's 10 s cancel grace period.
func BenchmarkFakeRun(b *testing.B) {
	b.Run("happy", func(b *testing.B) {
		var toFirst, cpu, selfCPU time.Duration
		var maxRSS, selfHWM int64
		for b.Loop() {
			e := newE2E(b, "bench-happy", tinyRecipe("bench-happy", 1))
			e.setenv("FAKE_VLLM_STARTUP_DELAY", "1s")
			r := e.start("--health-timeout", "5m")
			samples := sampleProc(r)
			readyAt := pollHealthy(b, r, "http://127.0.0.1:"+strconv.Itoa(e.port)+"/health")
			o := r.wait()
			if o.code != 0 {
				b.Fatalf("runner exit code %d:\n%s", o.code, o.stdout)
			}
			first, ok := r.stdout.first(`"POST /v1/completions HTTP/1.1"`)
			if !ok {
				b.Fatal("no bench request in the log")
			}
			toFirst += first.Sub(readyAt)
			cpu += o.state.UserTime() + o.state.SystemTime()
			maxRSS = max(maxRSS, o.state.SysUsage().(*syscall.Rusage).Maxrss)
			s := <-samples
			selfCPU += s.cpu
			selfHWM = max(selfHWM, s.hwmKB)
			e.checkNoLeftovers()
		}
		n := float64(b.N)
		b.ReportMetric(millis(toFirst)/n, "ms-ready-to-first-request")
		b.ReportMetric(millis(cpu)/n, "ms-cpu-with-children")
		b.ReportMetric(float64(maxRSS), "KB-maxrss-with-children")
		b.ReportMetric(millis(selfCPU)/n, "ms-cpu-runner")
		b.ReportMetric(float64(selfHWM), "KB-maxrss-runner")
	})

	b.Run("dead-server", func(b *testing.B) {
		var load, midBench time.Duration
		for b.Loop() {
			e := newE2E(b, "bench-load-crash", tinyRecipe("bench-load-crash", 1))
			e.setenv("FAKE_VLLM_STARTUP_DELAY", "1s", "FAKE_VLLM_EXIT_DURING_LOAD", "1")
			r := e.start("--health-timeout", "5m")
			r.wait()
			load += between(b, r, "[vllm] RuntimeError: Engine core initialization failed", "runner: ready failed")
			e.checkNoLeftovers()

			e = newE2E(b, "bench-bench-crash", tinyRecipe("bench-bench-crash", 1))
			e.setenv("FAKE_VLLM_DIE_AFTER_REQUESTS", "4", "FAKE_VLLM_TOKEN_DELAY", "20ms")
			r = e.start("--health-timeout", "5m")
			r.wait()
			midBench += between(b, r, "[vllm] ERROR", "runner: bench failed")
			e.checkNoLeftovers()
		}
		b.ReportMetric(millis(load)/float64(b.N), "ms-detect-exit-during-load")
		b.ReportMetric(millis(midBench)/float64(b.N), "ms-detect-death-mid-bench")
	})

	b.Run("sigterm", func(b *testing.B) {
		var graceful, killed, worst time.Duration
		for b.Loop() {
			graceful += stopTime(b, "10s")
			killed += stopTime(b, "1s", "FAKE_VLLM_IGNORE_SIGTERM", "true")
			// The cancel budget's worst case: the default 10 s grace, a
			// server and bench that ignore SIGTERM, an engine that left
			// the server's session. It must end well inside the agent's
			// 10 s cancel grace period.
			worst += stopTime(b, "10s", "FAKE_VLLM_IGNORE_SIGTERM", "true", "FAKE_VLLM_ENGINE_ESCAPE", "session")
		}
		b.ReportMetric(millis(graceful)/float64(b.N), "ms-stop-graceful")
		b.ReportMetric(millis(killed)/float64(b.N), "ms-stop-kill-after-1s-grace")
		b.ReportMetric(millis(worst)/float64(b.N), "ms-stop-worst-case-default-grace")
	})
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// between is the time from the first line holding from to the first
// holding to, in the runner's log.
func between(b *testing.B, r *runnerProc, from, to string) time.Duration {
	b.Helper()
	t0, ok0 := r.stdout.first(from)
	t1, ok1 := r.stdout.first(to)
	if !ok0 || !ok1 {
		b.Fatalf("log lacks %q or %q:\n%s", from, to, r.stdout.String())
	}
	return t1.Sub(t0)
}

// stopTime runs a slow bench, sends the runner SIGTERM and times until
// the runner and all its children are gone.
func stopTime(b *testing.B, grace string, env ...string) time.Duration {
	b.Helper()
	e := newE2E(b, "bench-sigterm", tinyRecipe("bench-sigterm", 1))
	e.setenv("FAKE_VLLM_TOKEN_DELAY", "300ms")
	e.setenv(env...)
	r := e.start("--health-timeout", "5m", "--grace", grace)
	e.waitFor("running vllm bench serve", r, func() bool {
		log, _ := os.ReadFile(e.results("bench-short.log"))
		return strings.Contains(string(log), "Starting main benchmark run")
	})
	start := time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		b.Fatal(err)
	}
	<-r.done
	for len(e.descendants()) > 0 && time.Since(start) < runBound {
		time.Sleep(time.Millisecond)
	}
	d := time.Since(start)
	e.checkNoLeftovers()
	return d
}

// pollHealthy polls url every 2 ms and returns when it first answered 200.
func pollHealthy(b *testing.B, r *runnerProc, url string) time.Time {
	b.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(pollBound)
	for time.Now().Before(deadline) {
		resp, err := client.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Now()
			}
		}
		select {
		case <-r.done:
			b.Fatalf("runner exited before the server was healthy:\n%s", r.stdout.String())
		case <-time.After(2 * time.Millisecond):
		}
	}
	b.Fatalf("server not healthy after %s", pollBound)
	return time.Time{}
}

// procSample is the runner's own usage, read from /proc.
type procSample struct {
	cpu   time.Duration
	hwmKB int64
}

// sampleProc reads the runner's CPU time and peak RSS from /proc every
// 5 ms until it exits, and sends the highest readings: an exiting process
// already lacks some of them.
func sampleProc(r *runnerProc) <-chan procSample {
	out := make(chan procSample, 1)
	pid := r.cmd.Process.Pid
	go func() {
		var last procSample
		for {
			if s, ok := readProcSample(pid); ok {
				last.cpu = max(last.cpu, s.cpu)
				last.hwmKB = max(last.hwmKB, s.hwmKB)
			}
			select {
			case <-r.done:
				out <- last
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return out
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat;
// 100 on every Linux architecture Go supports.
const clockTicks = 100

func readProcSample(pid int) (procSample, bool) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procSample{}, false
	}
	// Fields after the command name: state is field 3, utime 14, stime 15.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 || f[0] == "Z" {
		return procSample{}, false
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	s := procSample{cpu: time.Duration(utime+stime) * time.Second / clockTicks}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return procSample{}, false
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			s.hwmKB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return s, true
}
