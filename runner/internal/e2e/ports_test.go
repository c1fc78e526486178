package e2e

// Two docker jobs on one host: each job's server gets the port its job id
// derives (20000 + cksum(id) % 40000), published on the host's loopback,
// so both run at once and pass. A port something else holds gives way to
// a free one.

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/runner/internal/job"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// jobIDWithFreePort is a job id like Buildkite's whose derived port
// nothing holds right now, and that port.
func jobIDWithFreePort(t *testing.T, prefix string, avoid ...int) (string, int) {
	t.Helper()
	for i := 0; i < 100; i++ {
		id := prefix + "-4000-8000-" + strconv.FormatInt(time.Now().UnixNano()+int64(i), 16)
		p := job.JobPort(id)
		if slices.Contains(avoid, p) {
			continue
		}
		if l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			l.Close()
			return id, p
		}
	}
	t.Fatal("no job id with a free port in 100 tries")
	return "", 0
}

// phase returns the named phase of s.
func phaseOf(t *testing.T, s *summary.Summary, name string) summary.Phase {
	t.Helper()
	for _, p := range s.Phases {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("summary has no %s phase: %+v", name, s.Phases)
	return summary.Phase{}
}

func TestE2ETwoDockerJobsOnOneHost(t *testing.T) {
	t.Parallel()
	requireLinux(t)
	host := t.TempDir() // one docker daemon's state: one host
	var (
		es    []*e2e
		ports []int
	)
	for _, name := range []string{"e2e-host-a", "e2e-host-b"} {
		id, port := jobIDWithFreePort(t, "0190b1e4-"+name, ports...)
		// Slow tokens keep each bench running for seconds, so that the
		// two servers are up at the same time.
		e, _ := newDockerE2E(t, name, 1, "FAKE_VLLM_TOKEN_DELAY", "100ms")
		e.setenv("FAKE_DOCKER_STATE", host, "BUILDKITE_JOB_ID", id)
		e.port = 0
		es, ports = append(es, e), append(ports, port)
	}
	procs := []*runnerProc{es[0].start("--bench-only"), es[1].start("--bench-only")}
	var sums []*summary.Summary
	for i, p := range procs {
		o := p.wait()
		checkCode(t, o, 0)
		s := es[i].summary()
		if s.Verdict != summary.VerdictPass {
			t.Errorf("%s: verdict %q, want pass\n%s", es[i].recipe, s.Verdict, o.stdout)
		}
		starts := es[i].serverStarts()
		want := "--port " + strconv.Itoa(ports[i])
		if len(starts) != 1 || !strings.Contains(strings.Join(starts[0], " "), want) {
			t.Errorf("%s: vllm serve started as %q, want once with %s", es[i].recipe, starts, want)
		}
		sums = append(sums, &s)
	}
	// Both benches ran while the other's server was up.
	a, b := phaseOf(t, sums[0], "bench"), phaseOf(t, sums[1], "bench")
	if !a.Started.Before(b.Finished) || !b.Started.Before(a.Finished) {
		t.Errorf("benches did not overlap: a %s–%s, b %s–%s", a.Started, a.Finished, b.Started, b.Finished)
	}
}

// TestE2EDockerDerivedPortHeld: when something holds the port the job id
// derives, the server takes a free port and the log says why.
func TestE2EDockerDerivedPortHeld(t *testing.T) {
	t.Parallel()
	requireLinux(t)
	id, port := jobIDWithFreePort(t, "0190b1e4-held")
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	e, _ := newDockerE2E(t, "e2e-port-held", 1)
	e.setenv("BUILDKITE_JOB_ID", id)
	e.port = 0
	o := e.run("--bench-only")
	checkCode(t, o, 0)
	if s := e.summary(); s.Verdict != summary.VerdictPass {
		t.Errorf("verdict %q, want pass", s.Verdict)
	}
	if want := "port " + strconv.Itoa(port) + " is held by"; !strings.Contains(o.stdout+o.stderr, want) || !strings.Contains(o.stdout+o.stderr, "the port came from the job id, so the server takes free port") {
		t.Errorf("log does not say the derived port %d was held and replaced:\n%s", port, o.stdout+o.stderr)
	}
	starts := e.serverStarts()
	if len(starts) != 1 || strings.Contains(strings.Join(starts[0], " "), "--port "+strconv.Itoa(port)+" ") {
		t.Errorf("vllm serve started as %q, want once on another port than %d", starts, port)
	}
}
