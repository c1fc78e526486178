package e2e

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bisect"
	"github.com/benchkite/benchkite/internal/bisect/bisecttest"
	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/fakebin"
	"github.com/benchkite/benchkite/runner/internal/report"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// drillOut is where `make drill` keeps the drill's build report and its
// bisect annotation, for the README's picture.
var drillOut = flag.String("drill-out", "", "write the drill's build report and bisect annotation to this directory")

// The drill's vLLM history: commits in the order vLLM's nightly images
// were pushed. Nights 101–105 ran older commits, night 106 (the last
// good) drillCommit(0); drillCommit(1..8) are the candidates, 8 the first
// bad night's (107); 9–11 the nights after. From drillK on, vLLM is slow.
const (
	drillK      = 5
	drillOrigin = 110
	drillFast   = "20ms" // the stand-in's time per token
	drillSlow   = "45ms"
)

func drillCommit(i int) string {
	h := sha1.Sum([]byte(fmt.Sprint("drill vllm commit ", i)))
	return hex.EncodeToString(h[:])
}

// drillRecipe is a bench-only MI355X recipe the stand-ins run in seconds,
// its throughput judged by the regression detector with a 25 % floor: a
// step of 2× is a regression, a busy machine is not.
func drillRecipe(name string) string {
	return tinyHead(name, "") + "vllm_bench:\n  configs:\n" + shortBench("short") + `      regression:
        rerun_on_alarm: false
        metrics:
          output_throughput: {max_drop_pct: 25}
`
}

// TestDrill is a red night on the stand-ins, end to end: a catalog of
// three recipes, one lost with its agent (infra, after a try the agent
// stopped under and Buildkite retried), one whose vLLM runs out of GPU
// memory (vllm), one whose throughput halved at a scripted vLLM commit
// (perf). The runner runs every night and every bisect build as a real
// process; `runner report` classes the night, totals its GPU time
// (retried tries included) and bisects the regression through the
// Buildkite API and registry stand-ins, one bisect build at a time, a
// build whose server died retried once, until it names the commit.
func TestDrill(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	fakes := fakebin.Build(t)
	dir := t.TempDir()
	var read readers
	t.Cleanup(func() { checkReadable(t, dir, read.text()...) })

	// The registry: a nightly image per commit, pushed in commit order.
	repo := bisecttest.Registry(t, "vllm/vllm-openai-rocm")
	order := []int{101, 102, 103, 104, 105, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	var commits []string
	for _, c := range order {
		commits = append(commits, drillCommit(c))
	}
	t0 := time.Date(2026, 11, 20, 2, 0, 0, 0, time.UTC)
	bisecttest.Nightlies(t, repo, t0, commits)
	index := map[string]int{}
	for _, c := range order {
		index[drillCommit(c)] = c
	}
	slow := func(commit string) bool { i := index[commit]; return i >= drillK && i <= 11 }

	// The checkout: the repository's profiles with the MI355X images in
	// the stand-in registry, a price and a bisect budget; the recipes.
	checkoutProfiles(t, dir)
	profiles := filepath.Join(dir, "agents", "profiles.yaml")
	data, err := os.ReadFile(profiles)
	if err != nil {
		t.Fatal(err)
	}
	head, tail, ok := strings.Cut(string(data), "\nMI355X:\n")
	if !ok || !strings.Contains(tail, "  image_repo: vllm/vllm-openai-rocm\n") {
		t.Fatal("agents/profiles.yaml has no MI355X profile with image_repo vllm/vllm-openai-rocm")
	}
	tail = strings.Replace(tail, "  image_repo: vllm/vllm-openai-rocm\n", "  image_repo: "+repo+"\n  gpu_hour_price: 4.2\n  bisect_gpu_hours: 2\n", 1)
	if err := os.WriteFile(profiles, []byte(head+"\nMI355X:\n"+tail), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{"drill-perf", "drill-oom"} {
		if err := os.WriteFile(filepath.Join(dir, r+".yaml"), []byte(drillRecipe(r)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	hist := &baseline.File{Version: baseline.FileVersion, Recipes: map[string]baseline.FileRecipe{}}
	histPath := filepath.Join(dir, "history.json")
	writeHist := func(path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(hist)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	baseEnv := func(build int) []string {
		return []string{
			"PATH=" + fakes + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + os.TempDir(),
			"BENCHKITE_TOOLS=path", "BUILDKITE_BUILD_NUMBER=" + strconv.Itoa(build), "BUILDKITE_BRANCH=main",
			"BUILDKITE_ORGANIZATION_SLUG=org", "BUILDKITE_PIPELINE_SLUG=nightly",
		}
	}
	// night runs recipe as build's job on commit; knobs are the stand-in
	// vLLM's. It returns the summary the job wrote.
	night := func(recipe string, build int, commit string, knobs ...string) summary.Summary {
		t.Helper()
		if err := os.RemoveAll(filepath.Join(dir, "results", recipe)); err != nil {
			t.Fatal(err)
		}
		delay := drillFast
		if slow(commit) {
			delay = drillSlow
		}
		env := append(baseEnv(build), "VLLM_COMMIT="+commit, "FAKE_VLLM_TOKEN_DELAY="+delay)
		pass := []string{"FAKE_VLLM_TOKEN_DELAY"}
		for _, kv := range knobs {
			env = append(env, kv)
			if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "FAKE_") {
				pass = append(pass, k)
			}
		}
		env = append(env, "BENCHKITE_PASS_ENV="+strings.Join(pass, ","))
		cmd := exec.Command(bin, "run", recipe+".yaml", "--port", strconv.Itoa(freePort(t)), "--baselines", histPath, "--health-timeout", "1m")
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		read.addText(string(out))
		s, rerr := summary.ReadFile(filepath.Join(dir, "results", recipe, "summary.json"))
		if rerr != nil {
			t.Fatalf("%s night #%d left no summary (%v, %v):\n%s", recipe, build, rerr, err, out)
		}
		return s
	}
	record := func(s summary.Summary, build int) {
		t.Helper()
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		r := hist.Recipes[s.Recipe]
		r.StepKey = contract.StepKey(s.Recipe)
		r.Nights = append([]baseline.FileNight{{BuildNumber: build, CreatedAt: t0.AddDate(0, 0, build-drillOrigin), Summary: data}}, r.Nights...)
		r.Asked = 30
		hist.Recipes[s.Recipe] = r
	}

	// The nights before: six good ones, then three slow ones (107–109).
	for build := 101; build < drillOrigin; build++ {
		commit := drillCommit(build)
		switch {
		case build == 106:
			commit = drillCommit(0)
		case build > 106:
			commit = drillCommit(build - 99)
		}
		writeHist(histPath)
		s := night("drill-perf", build, commit)
		if s.Verdict == summary.VerdictError {
			t.Fatalf("night #%d could not be judged: %v", build, s.Problems)
		}
		record(s, build)
	}
	writeHist(histPath)

	// The red night, build 110, on vLLM 11: the throughput regression is
	// still open; the OOM recipe's server dies loading.
	perf := night("drill-perf", drillOrigin, drillCommit(11))
	oom := night("drill-oom", drillOrigin, drillCommit(11), "FAKE_VLLM_STARTUP_DELAY=0.5s", "FAKE_VLLM_EXIT_DURING_LOAD=1")
	if perf.Verdict != summary.VerdictFail || oom.Failure == nil || oom.Failure.Signature != "gpu-oom" {
		t.Fatalf("the red night: perf %s (%v), oom failure %+v; want a failed regression and a GPU OOM", perf.Verdict, perf.Problems, oom.Failure)
	}

	// The build as the API shows it: the lost recipe's job ran twice, the
	// agent stopping under both; the perf recipe's first try was lost and
	// automatically retried.
	api := bkapitest.NewServer(t, "org", "nightly", "tok")
	lost, failed := -1, 1
	start := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	api.AddBuild(bkapitest.Build{Number: drillOrigin, State: "failed", CreatedAt: start, FinishedAt: start.Add(3 * time.Hour), Jobs: []bkapitest.Job{
		{ID: "0190f3a2-0000-4000-8000-000000000001", StepKey: "recipe:drill-lost", State: "failed", ExitStatus: &lost, Retried: true,
			RetriedInJobID: "0190f3a2-0000-4000-8000-000000000002", Signal: "SIGTERM", SignalReason: "agent_stop", StartedAt: start, FinishedAt: start.Add(50 * time.Minute)},
		{ID: "0190f3a2-0000-4000-8000-000000000002", StepKey: "recipe:drill-lost", State: "failed", ExitStatus: &lost, Signal: "SIGTERM", SignalReason: "agent_stop",
			StartedAt: start.Add(55 * time.Minute), FinishedAt: start.Add(70 * time.Minute)},
		{ID: "0190f3a2-0000-4000-8000-000000000003", StepKey: "recipe:drill-perf", State: "failed", ExitStatus: &lost, Retried: true,
			RetriedInJobID: "0190f3a2-0000-4000-8000-000000000004", SignalReason: "agent_stop", StartedAt: start, FinishedAt: start.Add(40 * time.Minute)},
		{ID: "0190f3a2-0000-4000-8000-000000000004", StepKey: "recipe:drill-perf", State: "failed", ExitStatus: &failed, StartedAt: start.Add(41 * time.Minute), FinishedAt: start.Add(42 * time.Minute)},
		{ID: "0190f3a2-0000-4000-8000-000000000005", StepKey: "recipe:drill-oom", State: "failed", ExitStatus: &failed, StartedAt: start, FinishedAt: start.Add(time.Minute)},
	}})

	// reportStep runs `runner report` as build's report step does, with
	// the stand-in agent recording what it posts.
	reportStep := func(build int, selected []string, extra ...string) (stdout, body string) {
		t.Helper()
		notes := filepath.Join(dir, "agent", strconv.Itoa(build))
		if err := os.MkdirAll(notes, 0o755); err != nil {
			t.Fatal(err)
		}
		env := append(baseEnv(build), "BUILDKITE=true", "BUILDKITE_AGENT_ACCESS_TOKEN=agent-token", "BENCHKITE_DOWNLOAD=false",
			"BUILDKITE_JOB_ID=0190f3a2-1111-4000-8000-"+fmt.Sprintf("%012d", build), "BUILDKITE_BUILD_URL=https://buildkite.com/org/nightly/builds/"+strconv.Itoa(build),
			"FAKE_AGENT_LOG="+filepath.Join(notes, "log.jsonl"), "FAKE_AGENT_ANNOTATIONS="+notes, "FAKE_AGENT_ARTIFACTS="+filepath.Join(notes, "artifacts"),
			"BENCHKITE_API_URL="+api.URL, "BUILDKITE_API_TOKEN=tok", contract.SelectedEnv+"="+contract.EncodeSelected(selected))
		cmd := exec.Command(bin, "report")
		cmd.Dir, cmd.Env = dir, append(env, extra...)
		out, _ := cmd.CombinedOutput()
		read.addText(string(out))
		md, err := os.ReadFile(filepath.Join(notes, report.Context+".md"))
		if err != nil {
			t.Fatalf("build #%d's report step posted no report (%v):\n%s", build, err, out)
		}
		return string(out), string(md)
	}
	writeHist(filepath.Join(dir, "results", "_history", "baselines.json"))
	out, body := reportStep(drillOrigin, []string{"drill-lost", "drill-oom", "drill-perf"})
	for _, want := range []string{
		"### benchkite: 2 could not be judged, 1 regressed of 3 recipe(s)",
		"Red nights by class: infra 1 · vllm 1 · perf 1.",
		"(infra: agent stopped: job failed (agent_stop))",
		"(vllm: gpu-oom) **ready** failed: (EngineCore pid=", ") torch.OutOfMemoryError",
		"held by 2 retried tries (infra 2)",
		"; cost ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the red night's report lacks %q:\n%s", want, body)
		}
	}
	if !strings.Contains(out, "runner: bisect drill-perf: ") || len(api.Created()) != 1 {
		t.Fatalf("the red night's report step started no bisect:\n%s", out)
	}

	// The bisect builds, each triggered by the report step of the one
	// before: only drill-perf, bench only, on the commit in its env. The
	// first one's server dies (an NCCL error): inconclusive, tried again.
	var steps []string
	for i := 0; i < len(api.Created()); i++ {
		c := api.Created()[i]
		build := drillOrigin + 1 + i
		if c.Env["WORKLOADS"] != "drill-perf" || c.Env["BENCH_ONLY"] != "1" {
			t.Fatalf("bisect build #%d env = %v, want drill-perf alone, bench only", build, c.Env)
		}
		commit := c.Env["VLLM_COMMIT"]
		var knobs []string
		if i == 0 {
			knobs = []string{"FAKE_VLLM_EXIT_DURING_LOAD=1", "FAKE_VLLM_EXIT_MESSAGE=RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)"}
		}
		night("drill-perf", build, commit, append(knobs, "BENCH_ONLY=1")...)
		out, _ := reportStep(build, []string{"drill-perf"}, bisect.Env+"="+c.Env[bisect.Env], bisect.MACEnv+"="+c.Env[bisect.MACEnv])
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "runner: bisect") || strings.HasPrefix(l, "runner: warning: bisect") {
				steps = append(steps, fmt.Sprintf("#%d (vLLM %d): %s", build, index[commit], l))
			}
		}
		if i > 6 {
			t.Fatalf("more than 7 bisect builds:\n%s", strings.Join(steps, "\n"))
		}
	}
	t.Logf("bisect:\n%s", strings.Join(steps, "\n"))
	if max := bisect.MaxBuilds(8); len(api.Created()) > max {
		t.Errorf("%d bisect builds, want at most %d (⌈log2 8⌉ + 1)", len(api.Created()), max)
	}
	var last string
	for _, a := range api.Annotations() {
		if a.Build == drillOrigin && a.Context == bisect.AnnotationContext("drill-perf") {
			last = a.Body
		}
	}
	if want := "regressed at vLLM [" + drillCommit(drillK)[:12] + "]"; !strings.Contains(last, want) || !strings.Contains(last, "inconclusive: the run could not finish (vllm: nccl)") {
		t.Errorf("the red night's bisect annotation does not name vLLM %d (%q) with the inconclusive build:\n%s\nbisect:\n%s", drillK, want, last, strings.Join(steps, "\n"))
	}
	if *drillOut != "" {
		out := filepath.Join(testutil.ModuleRoot(t), *drillOut)
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, text := range map[string]string{"report.md": body, "bisect.md": last} {
			if err := os.WriteFile(filepath.Join(out, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}
