package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/fakebin"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/trend"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// trendFixture is the report's test build (testdata/report/results) with
// a history of 14 nights per recipe, written as the history step writes
// it: minimax's throughput and TPOT worsen from night 11, whose job
// failed, gpt_oss's configuration changed four nights ago.
func trendFixture(t *testing.T) (dir string, sums []summary.Summary) {
	t.Helper()
	dir = t.TempDir()
	sums, problems := readSummaries("testdata/report/results")
	if len(sums) != 3 || len(problems) != 2 {
		t.Fatalf("test build has %d summaries and %d problems, want 3 and 2", len(sums), len(problems))
	}
	// GPU time: every run holds its GPUs about an hour and a quarter, most
	// of it loading; minimax's profile has a price.
	gpuTime := func(s summary.Summary, hours float64) *summary.GPUTime {
		g := float64(max(s.NumGPUs, 1))
		t := &summary.GPUTime{GPUs: int(g), Total: hours * 3600 * g, Phases: map[string]float64{"load": 0.6 * hours * 3600 * g, "bench": 0.3 * hours * 3600 * g}}
		if s.Recipe == "minimax_m3-mi355x" {
			t.HourPrice = 2.5
		}
		return t
	}
	for i := range sums {
		sums[i].GPUTime = gpuTime(sums[i], 1.4)
		// A priced profile prices the bench runs' tokens.
		for j := range sums[i].Bench {
			sums[i].Bench[j].PriceTokens(sums[i].GPUTime.HourPrice, sums[i].NumGPUs)
		}
	}
	// Tonight's change point for minimax's throughput: the first bad night.
	for i := range sums {
		if sums[i].Recipe == "gpt_oss_120b-h200" {
			sums[i].Fingerprint = &summary.Fingerprint{Hash: "new"}
		}
		if sums[i].Recipe != "minimax_m3-mi355x" {
			continue
		}
		for j := range sums[i].Gates {
			if g := &sums[i].Gates[j]; g.Metric == "output_throughput" {
				g.ChangePoint = &summary.ChangePoint{Found: true, P: 0.0004, Before: 1480, After: 1310,
					LastGood: summary.NightRef{Build: 810, Value: 1478, VLLMCommit: "89ab012"}, FirstBad: summary.NightRef{Build: 811, Value: 1312, VLLMCommit: "a0b1c2d"}}
			}
		}
	}
	f := &baseline.File{Version: baseline.FileVersion, BuildNumber: 812, Recipes: map[string]baseline.FileRecipe{}}
	for _, s := range sums {
		var nights []baseline.Night
		for k := range 14 {
			build := 811 - k // newest first
			n := s
			n.Verdict = summary.VerdictPass
			failed := s.Recipe == "minimax_m3-mi355x" && k == 0 // the night the drop began
			if failed {
				n.Verdict = summary.VerdictFail
			}
			wobble := 1 + 0.012*math.Sin(float64(build)*1.7)
			slow := 1.0
			if s.Recipe == "minimax_m3-mi355x" && k == 0 {
				slow = 0.885 // the step began last night
			}
			n.VLLMCommit = fmt.Sprintf("%07x", 0x89ab012+build)
			if k == 0 && s.Recipe == "minimax_m3-mi355x" {
				n.VLLMCommit = "a0b1c2d"
			}
			if s.Recipe == "gpt_oss_120b-h200" {
				hash := "new"
				if k >= 4 {
					hash = "old"
				}
				n.Fingerprint = &summary.Fingerprint{Hash: hash}
			}
			n.GPUTime = gpuTime(s, 1.25+0.1*math.Sin(float64(build)))
			n.Bench = append([]summary.BenchRun(nil), s.Bench...)
			for i := range n.Bench {
				b := &n.Bench[i]
				base := b.OutputThroughputPerGPU
				if s.Recipe == "minimax_m3-mi355x" {
					base = 185
				}
				b.OutputThroughputPerGPU = base * wobble * slow
				b.TPOT.Median = b.TPOT.Median / wobble / slow * 0.93
				b.TTFT.Median = b.TTFT.Median * (2 - wobble)
				if b.SpecDecode != nil {
					sd := *b.SpecDecode
					sd.AcceptanceRate *= 2 - wobble
					sd.AcceptanceLength *= 2 - wobble
					b.SpecDecode = &sd
				}
				if c := b.Cost; c != nil && c.Output != nil {
					out := *c.Output / wobble / slow
					b.Cost = &summary.TokenCost{Input: c.Input, Output: &out, Total: c.Total}
				}
			}
			n.Accuracy = append([]summary.TaskResult(nil), s.Accuracy...)
			for i := range n.Accuracy {
				m := map[string]float64{}
				for key, v := range n.Accuracy[i].Metrics {
					m[key] = math.Min(1, v*(1+0.005*math.Cos(float64(build))))
					if s.Recipe == "minimax_m3-mi355x" {
						m[key] = 0.94 + 0.004*math.Cos(float64(build))
					}
				}
				n.Accuracy[i].Metrics = m
			}
			data, err := json.Marshal(n)
			if err != nil {
				t.Fatal(err)
			}
			nights = append(nights, baseline.Night{BuildNumber: build, CreatedAt: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC).AddDate(0, 0, -k), Summary: data, Failed: failed})
		}
		if s.Recipe == "kimi_k2_5-mi300x" {
			nights = nil // a recipe that never ran: tonight only
		}
		f.Record(s.Recipe, contract.StepKey(s.Recipe), trendNights, baseline.Result{Nights: nights}, nil)
	}
	if err := os.MkdirAll(filepath.Join(dir, "_history"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteFile(filepath.Join(dir, "_history", "baselines.json")); err != nil {
		t.Fatal(err)
	}
	return dir, sums
}

func fixturePage(t *testing.T) (path string, html string) {
	t.Helper()
	dir, sums := trendFixture(t)
	hist := baseline.NewHistory(func(context.Context) (baseline.Source, error) {
		return baseline.FileSource(filepath.Join(dir, "_history", "baselines.json")), nil
	})
	path, err := writeTrendPage(context.Background(), dir, gate.JudgeBuild(sums, nil, gate.Budget{}), hist, "benchkite: the nights of every recipe, build #812")
	if err != nil {
		t.Fatalf("writeTrendPage() = %v", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, string(data)
}

// TestTrendPage: the page is where annotations link, self-contained, one
// section per recipe worst first, each metric's chart with its nights,
// band, limit, marks and hover texts.
func TestTrendPage(t *testing.T) {
	t.Parallel()
	path, page := fixturePage(t)
	if want := filepath.Join("_report", "trends.html"); !strings.HasSuffix(path, want) || !strings.HasSuffix(annotate.TrendPage, filepath.ToSlash(want)) {
		t.Errorf("page written to %s, want it where annotations link (%s)", path, annotate.TrendPage)
	}
	testutil.Golden(t, "testdata/report/trends.html", []byte(page))
	// No network: nothing loaded from elsewhere.
	if m := regexp.MustCompile(`(?i)(src|href)="(https?:)?//|@import|url\(`).FindString(page); m != "" {
		t.Errorf("page loads %q from the network", m)
	}
	order := regexp.MustCompile(`<section id="([^"]+)" class="recipe"`).FindAllStringSubmatch(page, -1)
	var ids []string
	for _, m := range order {
		ids = append(ids, m[1])
	}
	if strings.Join(ids, " ") != "kimi_k2_5-mi300x minimax_m3-mi355x gpt_oss_120b-h200" {
		t.Errorf("sections %v, want worst first", ids)
	}
	overview := section(page, "gpu-time")
	for _, want := range []string{`class="overview" data-charts="2"`, "GPU time per night", "Cost per night",
		// Night #811: minimax (failed) and gpt_oss (8 GPUs each) ran, 1.25+0.1·sin(811) = 1.295 h
		// each: 20.7 GPU-h; minimax's priced at 2.5 an hour: 25.90. Tonight all
		// three (8 GPUs each) 1.4 h: 33.6 GPU-h, minimax's 28.00.
		"<title>#811: 20.7 GPU-h over 2 run(s), most in load (60%) · 2026-11-30</title>", "<title>#811: 25.90 (1 of 2 runs priced)</title>",
		"<title>tonight: 33.6 GPU-h over 3 run(s), most in load (60%)</title>", "<title>tonight: 28.00 (1 of 3 runs priced)</title>"} {
		if !strings.Contains(overview, want) {
			t.Errorf("the GPU time section lacks %q:\n%s", want, overview)
		}
	}
	if n := strings.Count(overview, `class="night"`); n != 2*14 {
		t.Errorf("the GPU time section shows %d past nights over its charts, want 2 × 14", n)
	}
	minimax := section(page, "minimax_m3-mi355x")
	for _, want := range []string{
		`data-charts="7"`, "Output throughput per GPU", "TPOT p50", "TTFT p50", "Cost per million output tokens", "EAGLE acceptance", "EAGLE acceptance length", "gsm8k exact_match,flexible-extract",
		`class="limit"`, ">change<", "fill-opacity=\"0.15\"",
		// Night #811's job failed: a ring, its hover and the key.
		`<title>#811: 165 tok/s · vLLM a0b1c2d · 2026-11-30 · job failed</title>`, ">a night whose job failed<",
	} {
		if !strings.Contains(minimax, want) {
			t.Errorf("minimax section lacks %q", want)
		}
	}
	gpt := section(page, "gpt_oss_120b-h200")
	if !strings.Contains(gpt, ">recipe changed<") || !strings.Contains(gpt, "the recipe before it changed") {
		t.Errorf("gpt_oss section does not mark where the recipe changed")
	}
	if strings.Contains(gpt, "failed") {
		t.Errorf("gpt_oss section, whose nights all passed, speaks of a failed night")
	}
	if n, failed := strings.Count(minimax, `class="night"`), strings.Count(minimax, `class="night failed"`); n != 7*13 || failed != 7 {
		t.Errorf("minimax shows %d passed and %d failed past nights over its charts, want 7 × 13 and 7 × 1 (#811)", n, failed)
	}
	if !strings.Contains(page, `<span class="k failed"></span> failed night`) {
		t.Errorf("the page legend lacks the failed night's key")
	}
}

// section is the HTML of one recipe's section.
func section(page, id string) string {
	i := strings.Index(page, `<section id="`+id+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(page[i:], "</section>")
	return page[i : i+j]
}

// chromium is the browser the page test runs in: $BENCHKITE_CHROMIUM, else
// the first of the usual names on PATH.
func chromium() string {
	if p := os.Getenv("BENCHKITE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// TestTrendPageInChromium loads the page in a real headless Chromium: no
// console message (the page logs nothing, so any is an error), the page's
// script ran, and every recipe's charts are drawn with their nights.
func TestTrendPageInChromium(t *testing.T) {
	t.Parallel()
	bin := chromium()
	if bin == "" {
		testutil.Missing(t, "no Chromium (apt package chromium, or BENCHKITE_CHROMIUM): the trend page was not loaded in a browser")
	}
	path, _ := fixturePage(t)
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	profile := t.TempDir()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
		"--user-data-dir="+profile, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=3000", "--dump-dom", "file://"+abs)
	cmd.Env = append(os.Environ(), "HOME="+profile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --dump-dom: %v\n%s", bin, err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Uncaught") {
			t.Errorf("console: %s", line)
		}
	}
	dom := string(out)
	if !strings.Contains(dom, `data-ready="1"`) {
		t.Fatalf("the page's script did not finish; DOM:\n%.2000s", dom)
	}
	re := regexp.MustCompile(`<section id="([^"]+)" class="(?:recipe|overview)"(?: data-recipe="[^"]*")? data-charts="(\d+)" data-drawn="(\d+)"`)
	got := re.FindAllStringSubmatch(dom, -1)
	if len(got) != 4 || got[0][1] != "gpu-time" || got[0][2] != "2" {
		t.Fatalf("Chromium's DOM has %d sections with a drawn count, want the GPU time and cost per night first (2 charts), then 3 recipes:\n%.3000s", len(got), dom)
	}
	for _, m := range got {
		charts, _ := strconv.Atoi(m[2])
		drawn, _ := strconv.Atoi(m[3])
		if m[1] == "kimi_k2_5-mi300x" {
			continue // failed before measuring anything: its charts say "no data"
		}
		if charts == 0 || drawn != charts {
			t.Errorf("%s: %d of %d charts drawn in Chromium", m[1], drawn, charts)
		}
	}
}

// TestRunInBuildkite: inside a job the report is posted on top
// (--priority) and the trend page uploaded, through the stand-in agent,
// which parses the flags as the real one does.
func TestRunInBuildkite(t *testing.T) {
	t.Parallel()
	bin := fakebin.Build(t)
	dir, _ := trendFixture(t)
	copySummaries(t, dir, "gpt_oss_120b-h200", "minimax_m3-mi355x")
	agent := t.TempDir()
	env := map[string]string{
		"PATH": bin + string(os.PathListSeparator) + os.Getenv("PATH"), "BUILDKITE_JOB_ID": "0190f3a2-0000-4000-8000-000000000999",
		"BUILDKITE_AGENT_ACCESS_TOKEN": "agent-token", "BUILDKITE_BUILD_NUMBER": "812",
		"FAKE_AGENT_LOG": filepath.Join(agent, "log.jsonl"), "FAKE_AGENT_ANNOTATIONS": filepath.Join(agent, "annotations"),
		"FAKE_AGENT_ARTIFACTS": filepath.Join(agent, "artifacts"),
	}
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	var out strings.Builder
	err := runReport(context.Background(), Config{Results: dir}, cliutil.Streams{Stdout: &out, Stderr: &out}, func(k string) string { return env[k] }, environ)
	var ee *cliutil.ExitError
	if !errors.As(err, &ee) || ee.Code != 1 {
		t.Fatalf("Run() = %v, want exit 1 for the regression\n%s", err, out.String())
	}
	log, err := os.ReadFile(env["FAKE_AGENT_LOG"])
	if err != nil {
		t.Fatalf("the agent was not run: %v\n%s", err, out.String())
	}
	var annotateArgv []string
	uploaded := false
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var inv struct{ Argv []string }
		if err := json.Unmarshal([]byte(line), &inv); err != nil {
			t.Fatal(err)
		}
		switch inv.Argv[1] {
		case "annotate":
			annotateArgv = inv.Argv
		case "artifact":
			uploaded = uploaded || strings.HasSuffix(inv.Argv[len(inv.Argv)-1], "_report/trends.html")
		}
	}
	want := []string{"buildkite-agent", "annotate", "--context", Context, "--style", "error", "--priority", "10"}
	if strings.Join(annotateArgv, " ") != strings.Join(want, " ") {
		t.Errorf("annotate argv = %q, want %q", annotateArgv, want)
	}
	body, err := os.ReadFile(filepath.Join(env["FAKE_AGENT_ANNOTATIONS"], Context+".md"))
	if err != nil || !strings.HasPrefix(string(body), "### benchkite: 1 failed, 1 passed of 2 recipe(s)") {
		t.Errorf("posted report = %.200q (%v), want the one-line summary first", body, err)
	}
	if !uploaded {
		t.Errorf("the trend page was not uploaded; agent log:\n%s", log)
	}
	stored := 0
	filepath.WalkDir(env["FAKE_AGENT_ARTIFACTS"], func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "trends.html" {
			stored++
		}
		return nil
	})
	if stored != 1 {
		t.Errorf("the artifact store holds %d trend pages, want 1", stored)
	}
}

// The page charts the server's time to ready, with the start-up gate's
// limit when the recipe judges it.
func TestTrendPageStartup(t *testing.T) {
	t.Parallel()
	base := 120.0
	tonight := summary.Summary{Recipe: "r", NumGPUs: 1, Startup: &summary.Startup{ReadySeconds: 180},
		Gates: []summary.GateResult{{Kind: summary.GateRegression, Subject: workloads.StartupSubject, Metric: "ready_s", Verdict: summary.VerdictFail,
			Baseline: &base, Detector: &summary.Detector{ThresholdPct: 25, NoiseCVPct: 2}}}}
	past := baseline.Nights{Nights: []baseline.Past{
		{Night: baseline.Night{BuildNumber: 2}, Summary: summary.Summary{Startup: &summary.Startup{ReadySeconds: 121}}},
		{Night: baseline.Night{BuildNumber: 1}, Summary: summary.Summary{}},
	}}
	var got *trend.Panel
	for _, p := range pagePanels(tonight, past) {
		if p.Title == "Server time to ready" {
			got = &p
		}
	}
	if got == nil {
		t.Fatal("no time-to-ready panel")
	}
	var values []string
	for _, pt := range got.Points {
		values = append(values, fmt.Sprint(pt.Value))
	}
	if diff := cmp.Diff([]string{"NaN", "121", "180"}, values); diff != "" {
		t.Errorf("points (-want +got):\n%s", diff)
	}
	if got.HigherIsBetter || got.Limit == nil || *got.Limit != 150 {
		t.Errorf("panel %+v: want lower is better and the gate's limit 150 s", got)
	}
}
