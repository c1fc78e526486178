package report

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bisect"
	"github.com/benchkite/benchkite/internal/bisect/bisecttest"
	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/oci"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

func vllmCommit(i int) string {
	h := sha1.Sum([]byte(fmt.Sprint("vllm ", i)))
	return hex.EncodeToString(h[:])
}

// writeSummary puts s where the report step reads it.
func writeSummary(t *testing.T, s summary.Summary) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, s.Recipe), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := summary.Write(filepath.Join(dir, s.Recipe, "summary.json"), s); err != nil {
		t.Fatal(err)
	}
	return dir
}

// apiClient is a client of the stand-in API's nightly pipeline, quick to
// give up.
func apiClient(t *testing.T, api *bkapitest.Server) *bkapi.Client {
	t.Helper()
	client, err := bkapi.New(bkapi.Config{BaseURL: api.URL, Token: "tok", Org: "org", Pipeline: "nightly", Timeout: 5 * time.Second, RetryDelay: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// bisectOfBuild700 is the bisect build 700 started of r-h200's sweep
// throughput, between commit 0 (good) and commit 4 (bad).
func bisectOfBuild700(t *testing.T) bisect.State {
	t.Helper()
	var cands []bisect.Candidate
	for i := 1; i <= 4; i++ {
		cands = append(cands, bisect.Candidate{Commit: vllmCommit(i)})
	}
	st, err := bisect.Start("r-h200", "output_throughput", vllmCommit(0), vllmCommit(4), cands, 700, 0)
	if err != nil {
		t.Fatal(err)
	}
	st.Subject, st.Regime = "sweep", bisect.Regime{Nights: []float64{100, 101, 99, 100, 102, 98}, HigherIsBetter: true, FloorPct: 5}
	return st
}

// The whole loop, as the report steps of the builds run it: the nightly
// build's regression starts a bisect; each bisect build's report step
// judges its run of the recipe (commit k and later are slow) and
// triggers the next, until the first bad commit is annotated on the
// build that found it. The API and the registry are loopback stand-ins.
func TestReportBisectsARegressionToItsCommit(t *testing.T) {
	t.Parallel()
	const n, k, recipe, origin = 12, 7, "llama-h200", 500
	repo := bisecttest.Registry(t, "vllm/vllm-openai")
	commits := make([]string, n)
	for i := range commits {
		commits[i] = vllmCommit(i)
	}
	bisecttest.Nightlies(t, repo, time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC), commits)
	api := bkapitest.NewServer(t, "org", "nightly", "tok")
	api.AddBuild(bkapitest.Build{Number: origin, State: "failed"})
	client := apiClient(t, api)
	night := func(commit string, value float64, gate *summary.GateResult) summary.Summary {
		g := summary.GateResult{Kind: summary.GateRegression, Subject: "sweep-conc-8", Metric: "output_throughput", Value: &value, Verdict: summary.VerdictPass}
		if gate != nil {
			g = *gate
		}
		return summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: recipe, GPU: "H200", NumGPUs: 8, Verdict: g.Verdict, VLLMCommit: commit,
			Image: repo + ":nightly-" + commit, Gates: []summary.GateResult{g},
			Bench:   []summary.BenchRun{{Name: "sweep-conc-8", Config: "sweep", Status: summary.StatusOK, Metrics: map[string]float64{"output_throughput": value}}},
			GPUTime: &summary.GPUTime{GPUs: 8, Total: 8 * 3600, BisectBudget: 100}}
	}
	// The good regime the nightly judged by: 20 nights about 1000 (±1 %),
	// a 5 % floor; the nights after the change averaged 940. A tested
	// commit 4 % down (960) is good, below the floor, though nearer the
	// bad mean; 10 % down is bad.
	var goodNights []float64
	for i := range 20 {
		goodNights = append(goodNights, 1000*(1+[]float64{0.4, -0.8, 1.0, -0.2, 0.6, -1.0, 0.2, 0.8, -0.6, -0.4}[i%10]/100))
	}
	bad := 900.0
	found := summary.GateResult{Kind: summary.GateRegression, Subject: "sweep-conc-8", Metric: "output_throughput", Value: &bad, Verdict: summary.VerdictFail,
		ChangePoint: &summary.ChangePoint{Found: true, Before: 1000, After: 940,
			LastGood: summary.NightRef{Build: 498, VLLMCommit: vllmCommit(0)}, FirstBad: summary.NightRef{Build: 499, VLLMCommit: vllmCommit(n - 1)},
			GoodRegime: &summary.Regime{Nights: goodNights, HigherIsBetter: true, FloorPct: 5}}}
	var out strings.Builder
	run := func(s summary.Summary, env map[string]string, build int) error {
		out.Reset()
		return runReport(context.Background(), Config{Results: writeSummary(t, s), bisect: &bisector{client: client, branch: "main", build: build}},
			cliutil.Streams{Stdout: &out, Stderr: &out}, mapGetenv(env), nil)
	}
	_ = run(night(vllmCommit(n-1), 900, &found), map[string]string{}, origin)
	if !strings.Contains(out.String(), "runner: bisect llama-h200: 11 candidate image(s)") {
		t.Fatalf("the nightly's report did not start a bisect:\n%s", out.String())
	}
	index := map[string]int{}
	for i := range n {
		index[vllmCommit(i)] = i
	}
	for seen := 0; seen < len(api.Created()); seen++ {
		env := api.Created()[seen].Env
		commit := env["VLLM_COMMIT"]
		// Commits before k are a little slower (4 %, within the floor);
		// k and later 10 % slower.
		value := 960.0
		if index[commit] >= k {
			value = 900
		}
		s := night(commit, value, nil)
		if seen == 1 {
			// The second bisect build's job was lost: inconclusive, the
			// commit is tested again.
			s.Verdict, s.Bench, s.Problems = summary.VerdictError, nil, []string{"bench not-run: the agent was lost"}
		}
		number := origin + 1 + seen
		if err := run(s, map[string]string{bisect.Env: env[bisect.Env], bisect.MACEnv: env[bisect.MACEnv], "BUILDKITE_BUILD_NUMBER": strconv.Itoa(number)}, number); err != nil {
			t.Fatalf("bisect build #%d: %v\n%s", number, err, out.String())
		}
		if seen == 1 && !strings.Contains(out.String(), "inconclusive: the run could not finish: bench not-run: the agent was lost") {
			t.Fatalf("the lost bisect build was not called inconclusive:\n%s", out.String())
		}
	}
	if created := api.Created(); len(created) < 3 || created[1].Env["VLLM_COMMIT"] != created[2].Env["VLLM_COMMIT"] {
		t.Errorf("the inconclusive build's commit was not tested again")
	}
	if want := bisect.MaxBuilds(n - 1); len(api.Created()) > want {
		t.Errorf("%d bisect builds, want at most %d", len(api.Created()), want)
	}
	if !strings.Contains(out.String(), "the first bad vLLM commit is "+vllmCommit(k)) {
		t.Errorf("the last bisect build did not name commit %d:\n%s", k, out.String())
	}
	// The bisect builds are still scheduled in the stand-in: another
	// night's regression of the recipe starts no second bisect.
	created := len(api.Created())
	_ = run(night(vllmCommit(n-1), 900, &found), map[string]string{}, origin+100)
	if len(api.Created()) != created || !strings.Contains(out.String(), "is bisecting it already") {
		t.Errorf("a second bisect of the recipe started:\n%s", out.String())
	}
	var onOrigin []string
	for _, a := range api.Annotations() {
		if a.Build == origin {
			onOrigin = append(onOrigin, a.Body)
		}
	}
	if len(onOrigin) == 0 || !strings.Contains(onOrigin[len(onOrigin)-1], "regressed at vLLM ["+vllmCommit(k)[:12]+"]") {
		t.Errorf("the origin build's last annotation does not name commit %d: %q", k, onOrigin)
	}
}

// A commit that cannot be judged twice stops the bisect: the second
// inconclusive build triggers nothing, and the build that found the
// regression is told where the first bad commit lies and why it stopped.
func TestReportStopsABisectJudgedInconclusiveTwice(t *testing.T) {
	t.Parallel()
	api := bkapitest.NewServer(t, "org", "nightly", "tok")
	api.AddBuild(bkapitest.Build{Number: 700, State: "failed"})
	api.AddBuild(bkapitest.Build{Number: 701, State: "running"})
	api.AddBuild(bkapitest.Build{Number: 702, State: "running"})
	client := apiClient(t, api)
	st := bisectOfBuild700(t)
	mid, _ := st.Next()
	lostRun := summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: "r-h200", Verdict: summary.VerdictError, VLLMCommit: mid,
		Failure:  &summary.Failure{Class: "infra", Signature: "node-oom-kill", Line: "OOMKilled"},
		Problems: []string{"serve failed"}}
	var out strings.Builder
	for i, build := range []int{701, 702} {
		state, err := st.Encode()
		if err != nil {
			t.Fatal(err)
		}
		out.Reset()
		if err := runReport(context.Background(), Config{Results: writeSummary(t, lostRun), bisect: &bisector{client: client, branch: "main", build: build}},
			cliutil.Streams{Stdout: &out, Stderr: &out}, mapGetenv(map[string]string{bisect.Env: state, bisect.MACEnv: client.MAC("bisect state", state)}), nil); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if len(api.Created()) != 1 || api.Created()[0].Env["VLLM_COMMIT"] != mid {
				t.Fatalf("the inconclusive build did not trigger %s again:\n%s", mid, out.String())
			}
			if st, err = bisect.Decode(api.Created()[0].Env[bisect.Env]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(api.Created()) != 1 || !strings.Contains(out.String(), "runner: bisect r-h200 stops: vLLM "+mid[:12]+" could not be judged twice") {
		t.Errorf("a second inconclusive build went on (%d builds triggered):\n%s", len(api.Created()), out.String())
	}
	notes := api.Annotations()
	if len(notes) == 0 || notes[len(notes)-2].Build != 700 || !strings.Contains(notes[len(notes)-2].Body, "stopped: the first bad commit is one of 4 after") ||
		!strings.Contains(notes[len(notes)-2].Body, "inconclusive: the run could not finish (infra: node-oom-kill): OOMKilled") {
		t.Errorf("the origin build was not told the bisect stopped: %+v", notes)
	}
}

// A good regime too short for the detector to judge a bisect build by
// starts no bisect: every build would be inconclusive.
func TestReportStartsNoBisectItCouldNotJudge(t *testing.T) {
	t.Parallel()
	api := bkapitest.NewServer(t, "org", "nightly", "tok")
	client := apiClient(t, api)
	v := 80.0
	s := summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: "r-h200", Verdict: summary.VerdictFail, VLLMCommit: vllmCommit(2),
		Image: "registry.local/vllm/vllm-openai:nightly-" + vllmCommit(2), GPUTime: &summary.GPUTime{GPUs: 8, Total: 3600, BisectBudget: 10},
		Gates: []summary.GateResult{{Kind: summary.GateRegression, Subject: "sweep", Metric: "output_throughput", Value: &v, Verdict: summary.VerdictFail,
			ChangePoint: &summary.ChangePoint{Found: true, Before: 100, After: 80,
				LastGood: summary.NightRef{Build: 3, VLLMCommit: vllmCommit(0)}, FirstBad: summary.NightRef{Build: 4, VLLMCommit: vllmCommit(1)},
				GoodRegime: &summary.Regime{Nights: []float64{100, 101, 99}, HigherIsBetter: true, FloorPct: 5}}}}}
	var out strings.Builder
	_ = runReport(context.Background(), Config{Results: writeSummary(t, s), bisect: &bisector{client: client, branch: "main", build: 5}},
		cliutil.Streams{Stdout: &out, Stderr: &out}, mapGetenv(nil), nil)
	if len(api.Created()) != 0 || !strings.Contains(out.String(), "runner: warning: bisect r-h200: no bisect: inconclusive: the good regime cannot judge a bisect build: first nights") {
		t.Errorf("%d builds triggered; want none, and why:\n%s", len(api.Created()), out.String())
	}
}

// BENCHKITE_BISECT is anyone's who can start a build: a state without the
// MAC the pipeline's report step gives the builds it triggers, or with
// one under another token, is not followed: no build is triggered, no
// annotation written.
func TestReportIgnoresABisectStateItDidNotWrite(t *testing.T) {
	t.Parallel()
	api := bkapitest.NewServer(t, "org", "nightly", "tok")
	api.AddBuild(bkapitest.Build{Number: 700, State: "failed"})
	client := apiClient(t, api)
	other, err := bkapi.New(bkapi.Config{BaseURL: api.URL, Token: "another-token", Org: "org", Pipeline: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	st := bisectOfBuild700(t)
	state, err := st.Encode()
	if err != nil {
		t.Fatal(err)
	}
	mid, _ := st.Next()
	v := 90.0
	s := summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: "r-h200", Verdict: summary.VerdictPass, VLLMCommit: mid,
		Bench: []summary.BenchRun{{Name: "sweep", Config: "sweep", Status: summary.StatusOK, Metrics: map[string]float64{"output_throughput": v}}}}
	for _, mac := range []string{"", "00", other.MAC("bisect state", state), client.MAC("bisect state", state+" ")} {
		var out strings.Builder
		if err := runReport(context.Background(), Config{Results: writeSummary(t, s), bisect: &bisector{client: client, branch: "main", build: 701}},
			cliutil.Streams{Stdout: &out, Stderr: &out}, mapGetenv(map[string]string{bisect.Env: state, bisect.MACEnv: mac}), nil); err != nil {
			t.Fatal(err)
		}
		if len(api.Created()) != 0 || len(api.Annotations()) != 0 || !strings.Contains(out.String(), "not a bisect build this pipeline triggered; ignored") {
			t.Errorf("MAC %q: %d build(s) triggered, %d annotation(s); want none and a warning:\n%s", mac, len(api.Created()), len(api.Annotations()), out.String())
		}
	}
}

// A registry that never answers holds the report step no longer than
// the bisect's bound: the step warns and ends, its report written.
func TestReportBisectIsBoundedInTime(t *testing.T) {
	t.Parallel()
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(silent.Close)
	api := bkapitest.NewServer(t, "org", "nightly", "tok")
	client := apiClient(t, api)
	var good []float64
	for i := range 20 {
		good = append(good, 1000+float64(i%3))
	}
	v := 900.0
	s := summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: "r-h200", Verdict: summary.VerdictFail, VLLMCommit: vllmCommit(2),
		Image: strings.TrimPrefix(silent.URL, "http://") + "/vllm/vllm-openai:nightly-" + vllmCommit(2), GPUTime: &summary.GPUTime{GPUs: 8, Total: 3600, BisectBudget: 10},
		Gates: []summary.GateResult{{Kind: summary.GateRegression, Subject: "sweep", Metric: "output_throughput", Value: &v, Verdict: summary.VerdictFail,
			ChangePoint: &summary.ChangePoint{Found: true, Before: 1000, After: 900,
				LastGood: summary.NightRef{Build: 3, VLLMCommit: vllmCommit(0)}, FirstBad: summary.NightRef{Build: 4, VLLMCommit: vllmCommit(1)},
				GoodRegime: &summary.Regime{Nights: good, HigherIsBetter: true, FloorPct: 5}}}}}
	var out strings.Builder
	start := time.Now()
	_ = runReport(context.Background(), Config{Results: writeSummary(t, s), bisect: &bisector{client: client, branch: "main", build: 5,
		registry: &oci.Client{Timeout: time.Minute}, timeout: 300 * time.Millisecond}},
		cliutil.Streams{Stdout: &out, Stderr: &out}, mapGetenv(nil), nil)
	if took := time.Since(start); took > 10*time.Second || !strings.Contains(out.String(), "runner: warning: bisect r-h200:") || !strings.Contains(out.String(), "context deadline exceeded") {
		t.Errorf("report took %s against a silent registry, want the bisect's bound and a warning:\n%s", took, out.String())
	}
	if len(api.Created()) != 0 {
		t.Errorf("%d builds triggered", len(api.Created()))
	}
}
