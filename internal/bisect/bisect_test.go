package bisect

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bisect/bisecttest"
	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/oci"
)

func commit(i int) string {
	h := sha1.Sum([]byte(fmt.Sprint("vllm commit ", i)))
	return hex.EncodeToString(h[:])
}

// nightlies pushes n nightly images to a loopback registry, commit i
// created i hours after the first, and returns the repository. Tags are
// pushed in an order other than their creation, and with other tags
// among them, so the listing's order is not the answer.
func nightlies(t *testing.T, n int) string {
	t.Helper()
	repo := bisecttest.Registry(t, "vllm/vllm-openai")
	t0 := time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC)
	for i := n - 1; i >= 0; i-- {
		bisecttest.Push(t, repo, "nightly-"+commit(i), t0.Add(time.Duration(i)*time.Hour))
	}
	bisecttest.Push(t, repo, "latest", t0)
	bisecttest.Push(t, repo, "nightly-20261101", t0) // a date, not a commit
	return repo
}

// A scripted series in which commit k is slow: every bisect build is
// triggered through the Buildkite API stand-in, carries its state in its
// environment, and the first bad commit is found within ⌈log2 n⌉+1 builds.
func TestBisectFindsTheSlowCommit(t *testing.T) {
	t.Parallel()
	const n = 17 // commits 0 (last good) .. 16 (first bad night)
	repo := nightlies(t, n)
	for k := 1; k < n; k++ {
		t.Run(fmt.Sprint("slow from ", k), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cands, err := Candidates(ctx, nil, repo, commit(0)[:12], commit(n-1))
			if err != nil {
				t.Fatal(err)
			}
			if len(cands) != n-1 || cands[0].Commit != commit(1) || cands[n-2].Commit != commit(n-1) {
				t.Fatalf("candidates = %d, first %s; want commits 1..%d in creation order", len(cands), cands[0].Commit, n-1)
			}
			srv := bkapitest.NewServer(t, "org", "nightly", "tok")
			client, err := bkapi.New(bkapi.Config{BaseURL: srv.URL, Token: "tok", Org: "org", Pipeline: "nightly", Timeout: 5 * time.Second, RetryDelay: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			s, err := Start("llama-h200", "output_throughput", commit(0), commit(n-1), cands, 4242, 100)
			if err != nil {
				t.Fatal(err)
			}
			s.GoodValue, s.BadValue = 1000, 800
			s.Regime = Regime{Nights: []float64{1000, 1001, 999, 1002, 998}, HigherIsBetter: true, FloorPct: 5}
			index := map[string]int{}
			for i := range n {
				index[commit(i)] = i
			}
			builds, last := 0, 0
			for !s.Done() {
				b, tested, err := Trigger(ctx, client, s, "main")
				if err != nil {
					t.Fatalf("build %d: %v", builds+1, err)
				}
				builds, last = builds+1, b.Number
				// The bisect build reads its state from its own env.
				created := srv.Created()
				env := created[len(created)-1].Env
				if env["VLLM_COMMIT"] != tested || env["WORKLOADS"] != "llama-h200" || env["BENCH_ONLY"] != "1" {
					t.Fatalf("build env = %v, want only llama-h200 on %s", env, tested)
				}
				got, err := Decode(env[Env])
				if err != nil {
					t.Fatal(err)
				}
				value := 1000.0
				if index[tested] >= k {
					value = 800 // commit k made it slow
				}
				s, err = got.Record(tested, b.Number, value, value < 900, 0.5)
				if err != nil {
					t.Fatal(err)
				}
			}
			srv.AddBuild(bkapitest.Build{Number: 4242, State: "failed"})
			if err := Announce(ctx, client, s, last); err != nil {
				t.Fatal(err)
			}
			notes := srv.Annotations()
			if len(notes) != 2 || notes[1].Build != last || notes[0].Build != 4242 || notes[0].Context != "benchkite-bisect-llama-h200" || notes[0].Style != "warning" ||
				!strings.Contains(notes[0].Body, "regressed at vLLM ["+commit(k)[:12]+"]("+commitURL(commit(k))+")") || !strings.Contains(notes[0].Body, "· first bad: ") {
				t.Errorf("annotations = %+v, want the origin build told the first bad commit %s", notes, commit(k))
			}
			if got := s.FirstBad(); got != commit(k) {
				t.Errorf("first bad = %s (commit %d), want commit %d", got, index[got], k)
			}
			if max := MaxBuilds(len(cands)); builds > max {
				t.Errorf("%d builds, want at most %d", builds, max)
			}
		})
	}
}

func TestBudgetStopsTheBisect(t *testing.T) {
	t.Parallel()
	cands := []Candidate{{Commit: commit(1)}, {Commit: commit(2)}, {Commit: commit(3)}, {Commit: commit(4)}}
	s, err := Start("r", "m", commit(0), commit(4), cands, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	next, err := s.Next()
	if err != nil {
		t.Fatal(err)
	}
	if s, err = s.Record(next, 2, 1, false, 1.5); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(); err == nil || !strings.Contains(err.Error(), "1.5 of 1.0 GPU-h used") {
		t.Errorf("Next() after the budget = %v, want the budget named", err)
	}
	if _, err := s.Record(commit(4), 3, 1, true, 0); err == nil {
		t.Error("Record() of a commit other than the midpoint succeeded")
	}
}

func TestCandidatesNeedBothEnds(t *testing.T) {
	t.Parallel()
	repo := nightlies(t, 3)
	if _, err := Candidates(context.Background(), nil, repo, "deadbee", commit(2)); err == nil || !strings.Contains(err.Error(), "last good commit deadbee") {
		t.Errorf("err = %v, want the missing good image named", err)
	}
	if _, err := Candidates(context.Background(), nil, repo, commit(2), commit(0)); err == nil || !strings.Contains(err.Error(), "not newer") {
		t.Errorf("err = %v, want the order refused", err)
	}
}

func TestDecodeRefusesBadState(t *testing.T) {
	t.Parallel()
	for _, v := range []string{`{}`, `{"recipe":"r","candidates":[{"commit":"abcdef0"}],"lo":-1,"hi":0}`, `{"recipe":"r","candidates":[{"commit":"abcdef0"}],"lo":0,"hi":0}`, `{"recipe":"r","extra":1}`, `not json`} {
		if _, err := Decode(v); err == nil || !strings.Contains(err.Error(), Env) {
			t.Errorf("Decode(%s) = %v, want an error naming %s", v, err, Env)
		}
	}
}

// A commit whose build cannot be judged is tested once more; a second
// inconclusive build of it stops the bisect, which then names the range
// it narrowed down to instead of guessing.
func TestInconclusiveIsRetriedOnceThenStops(t *testing.T) {
	t.Parallel()
	var cands []Candidate
	for i := 1; i <= 8; i++ {
		cands = append(cands, Candidate{Commit: commit(i)})
	}
	s, err := Start("r", "output_throughput", commit(0), commit(8), cands, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	s.Regime = Regime{Nights: []float64{1, 1, 1, 1, 1}, HigherIsBetter: true}
	first, _ := s.Next()
	if s, err = s.Record(first, 2, 1000, false, 1); err != nil {
		t.Fatal(err)
	}
	mid, _ := s.Next()
	if s, err = s.Inconclusive(mid, 3, "the run could not finish (infra: agent-lost)", 1); err != nil {
		t.Fatal(err)
	}
	again, err := s.Next()
	if err != nil || again != mid || s.Over() {
		t.Fatalf("after one inconclusive build: Next() = %s, %v, over %v; want %s again", again, err, s.Over(), mid)
	}
	if s, err = s.Inconclusive(mid, 4, "bench not measured", 1); err != nil {
		t.Fatal(err)
	}
	if !s.Over() || s.Done() || s.FirstBad() != "" {
		t.Fatalf("after two inconclusive builds: over %v, done %v, first bad %q; want stopped, not done", s.Over(), s.Done(), s.FirstBad())
	}
	if _, err := s.Next(); err == nil || !strings.Contains(err.Error(), "could not be judged twice") {
		t.Errorf("Next() of a stopped bisect = %v", err)
	}
	md := s.Markdown()
	for _, want := range []string{"stopped: the first bad commit is one of 4 after [" + short(commit(4)), "| #3 | [" + short(mid), "inconclusive: the run could not finish (infra: agent-lost)", "Stopped: vLLM " + short(mid) + " could not be judged twice (build #4: bench not measured)"} {
		if !strings.Contains(md, want) {
			t.Errorf("Markdown() lacks %q:\n%s", want, md)
		}
	}
	if s.UsedGPUHours != 3 {
		t.Errorf("used %g GPU-h, want the inconclusive builds counted (3)", s.UsedGPUHours)
	}
}

// On Docker Hub the candidates come from its tag list by push time,
// newest first, read only until both ends are seen: finding 2 among 600
// nightly tags costs a page or a few, and no manifest pull at all.
func TestCandidatesOnDockerHubAreCheap(t *testing.T) {
	t.Parallel()
	const n = 600
	var commits []string
	for i := range n {
		commits = append(commits, commit(i))
	}
	t0 := time.Date(2026, 6, 1, 2, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		good, bad   int
		maxRequests int
	}{
		{name: "the newest nights", good: 597, bad: 599, maxRequests: 1},
		{name: "a regression 500 tags back", good: 97, bad: 99, maxRequests: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			hub := bisecttest.NewHub(t, "vllm/vllm-openai", t0, commits)
			// Any registry request would fail: there is none on loopback.
			client := &oci.Client{HubAPI: hub.URL, Transport: refuseRegistry{}}
			cands, err := Candidates(context.Background(), client, "vllm/vllm-openai", commit(tt.good)[:12], commit(tt.bad))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cands {
				got = append(got, c.Commit)
			}
			if want := []string{commit(tt.good + 1), commit(tt.bad)}; strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("candidates = %v, want %v", got, want)
			}
			t.Logf("%d of %d tags: %d request(s)", len(cands), n, hub.Requests())
			if hub.Requests() > tt.maxRequests || client.Requests() != hub.Requests() {
				t.Errorf("%d request(s) to Docker Hub, %d in all; want at most %d, all to its web API", hub.Requests(), client.Requests(), tt.maxRequests)
			}
		})
	}
}

// refuseRegistry passes requests to loopback only: a request to the real
// Docker Hub fails the test.
type refuseRegistry struct{}

func (refuseRegistry) RoundTrip(r *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(r.URL.Host, "127.0.0.1:") {
		return nil, fmt.Errorf("request to %s", r.URL.Host)
	}
	return http.DefaultTransport.RoundTrip(r)
}
