package report

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// tagRE finds anything Markdown would take for an HTML tag, comment or
// declaration.
var tagRE = regexp.MustCompile(`<[A-Za-z/!?]`)

// ownTags are the only tags the report writes itself.
var ownTags = regexp.MustCompile(`</?code>|<a href="artifact://` + regexp.QuoteMeta(annotate.TrendPage) + `">|</a>`)

// checkNoRawHTML fails for any tag in body that the report did not write.
func checkNoRawHTML(t *testing.T, body string) {
	t.Helper()
	rest := ownTags.ReplaceAllString(body, "")
	if loc := tagRE.FindStringIndex(rest); loc != nil {
		from := max(loc[0]-40, 0)
		t.Errorf("raw HTML survives: …%s…", rest[from:min(loc[1]+40, len(rest))])
	}
}

// FuzzReport renders a build report from summaries any job could have
// written, with hostile text in every field that reaches the page.
func FuzzReport(f *testing.F) {
	f.Add("r-h200", "pass", "H200", "0190f3a2-0000-0000-0000-000000000001", "gsm8k", "8k", "output_throughput", "boom", "x", "reason", "problem", "https://buildkite.com/o/p/builds/1")
	f.Add("<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<iframe src=//evil>", "x)](javascript:alert(1))", "a|b|c", "`|`", "\\|", "line\nbreak\r\n| x |", "<!-- c -->", "<svg/onload=alert(1)>", "&lt;script&gt;", "https://buildkite.com/o/p/builds/1)<b>")
	f.Add("fail", "fail", "error", "0190f3a2-0000-0000-0000-00000000000Z", "\\", "\\`", "``", "<", "<a href=x>", "\u2028<p>", "\x00<x>", "javascript:alert(1)")
	f.Fuzz(func(t *testing.T, recipe, verdict, gpu, jobID, task, subject, metric, phaseErr, skippedName, skippedReason, problem, buildURL string) {
		s := summary.Summary{
			SchemaVersion: summary.SchemaVersion, Recipe: recipe, GPU: gpu, NumGPUs: 8, Verdict: verdict,
			Buildkite: &summary.BuildkiteInfo{JobID: jobID},
			Phases:    []summary.Phase{{Name: task, Status: summary.StatusFailed, Error: phaseErr, Cause: problem}},
			Bench:     []summary.BenchRun{{Name: subject, Status: summary.StatusOK, OutputThroughputPerGPU: 1}},
			Accuracy:  []summary.TaskResult{{Task: task, Status: summary.StatusOK, Metrics: map[string]float64{metric: 0.5}}},
			Gates: []summary.GateResult{
				{Kind: summary.GateAccuracy, Subject: subject, Metric: metric, Verdict: summary.VerdictFail, Message: phaseErr},
				{Kind: summary.GateBench, Subject: task, Metric: metric, Verdict: summary.VerdictError, Message: problem},
			},
		}
		other := s
		other.Verdict = summary.VerdictError
		skipped := []contract.Skipped{{Name: skippedName, Reason: skippedReason}}
		body := annotate.Cap(renderSums([]summary.Summary{s, other}, sameBuildComparisons([]summary.Summary{s, other}, ""), []string{problem}, skipped, buildURL), annotate.MaxBody)
		testutil.CheckMarkdownTables(t, body)
		checkNoRawHTML(t, body)
		// A link is only ever the report's own: to the build, for a job id.
		if n := strings.Count(body, "]("); n > 2 {
			t.Errorf("%d links in the report, want at most one per recipe:\n%s", n, body)
		}
		if len(body) >= 1<<20 {
			t.Errorf("report is %d bytes, want under 1 MiB", len(body))
		}
	})
}

// Every field of a summary that the report shows is escaped.
func TestReportEscapesSummaries(t *testing.T) {
	t.Parallel()
	hostile := []string{"<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "<iframe src=//evil></iframe>", "a | b"}
	for _, h := range hostile {
		s := summary.Summary{
			SchemaVersion: summary.SchemaVersion, Recipe: h, GPU: h, NumGPUs: 1, Verdict: h,
			Buildkite: &summary.BuildkiteInfo{JobID: h},
			Accuracy:  []summary.TaskResult{{Task: h, Status: summary.StatusOK, Metrics: map[string]float64{h: 0.5}}},
			Gates:     []summary.GateResult{{Subject: h, Metric: h, Verdict: summary.VerdictFail}},
			Phases:    []summary.Phase{{Name: h, Status: summary.StatusFailed}},
		}
		body := renderSums([]summary.Summary{s}, nil, []string{h}, []contract.Skipped{{Name: h, Reason: h}}, "https://buildkite.com/o/p/builds/1")
		testutil.CheckMarkdownTables(t, body)
		checkNoRawHTML(t, body)
	}
}

// 10,000 failing recipes (well over 1 MiB of report) are cut under Buildkite's
// 1 MiB limit, visibly.
func TestReportCapped(t *testing.T) {
	t.Parallel()
	var sums []summary.Summary
	for i := range 10000 {
		s := summary.Summary{SchemaVersion: summary.SchemaVersion, Recipe: fmt.Sprintf("r-%d", i), GPU: "H200", NumGPUs: 8, Verdict: summary.VerdictFail}
		for g := range 30 {
			s.Gates = append(s.Gates, summary.GateResult{Subject: fmt.Sprintf("run-%d", g), Metric: "output_throughput", Verdict: summary.VerdictFail})
		}
		sums = append(sums, s)
	}
	raw := renderSums(sums, sameBuildComparisons(sums, ""), nil, nil, "")
	if len(raw) < 1<<20 {
		t.Fatalf("uncut report is %d bytes; the case needs more than 1 MiB", len(raw))
	}
	body := annotate.Cap(raw, annotate.MaxBody)
	if len(body) >= 1<<20 || !strings.HasSuffix(body, annotate.Truncated) {
		t.Errorf("report is %d bytes ending %q, want under 1 MiB with the truncated note", len(body), body[max(len(body)-120, 0):])
	}
	testutil.CheckMarkdownTables(t, body)
}
