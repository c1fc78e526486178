package annotate

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

func TestRenderEscapesCells(t *testing.T) {
	t.Parallel()
	nasty := "a | b\r\nc\nd\re <script> `x`"
	s := summary.Summary{
		Recipe: "r-mi300x", GPU: "MI300X", NumGPUs: 1, TP: 1, Model: "m|odel", Verdict: summary.VerdictError,
		Phases:   []summary.Phase{{Name: "bench", Status: summary.StatusFailed, Error: nasty}},
		Bench:    []summary.BenchRun{{Name: "run|1", Status: summary.StatusFailed, Error: nasty}},
		Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusFailed, Error: nasty}},
		Gates: []summary.GateResult{{Kind: "regression", Subject: "run|1", Metric: "output_throughput", Bound: nasty,
			Verdict: summary.VerdictNoBaseline, Message: "gate: " + nasty}},
	}
	got := Render(s, "")
	testutil.CheckMarkdownTables(t, got)
	const escaped = "a &#124; b c d e &lt;script&gt; &#96;x&#96;"
	if n := strings.Count(got, escaped); n != 5 {
		t.Errorf("escaped text appears %d times, want 5 (failure, bench, accuracy, gate bound, no-baseline note):\n%s", n, got)
	}
	for _, bad := range []string{"\r", "<script>", "`x`", "run|1"} {
		if strings.Contains(got, bad) {
			t.Errorf("annotation contains %q unescaped:\n%s", bad, got)
		}
	}
}

func TestRenderSize(t *testing.T) {
	t.Parallel()
	// Two-byte characters placed so that every clip length (a multiple of
	// 4) falls inside one unless the cut moves back.
	huge := "abc" + strings.Repeat("é|\n", 1<<20)
	t.Run("huge error messages are clipped", func(t *testing.T) {
		t.Parallel()
		s := summary.Summary{
			Recipe: "r-mi300x", GPU: "MI300X", NumGPUs: 1, TP: 1, Model: "m", Verdict: summary.VerdictError,
			Phases:   []summary.Phase{{Name: "serve", Status: summary.StatusFailed, Error: huge}},
			Bench:    []summary.BenchRun{{Name: "r", Status: summary.StatusFailed, Error: huge}},
			Accuracy: []summary.TaskResult{{Task: "gsm8k", Status: summary.StatusFailed, Error: huge}},
			Gates:    []summary.GateResult{{Kind: "bench", Subject: "r", Metric: "m", Bound: huge, Verdict: summary.VerdictNoBaseline, Message: huge}},
		}
		got := Render(s, "")
		if len(got) > 8<<10 {
			t.Errorf("annotation is %d bytes, want the error text clipped to a few KiB", len(got))
		}
		if !utf8.ValidString(got) {
			t.Error("annotation is not valid UTF-8: a clip split a character")
		}
		if !strings.Contains(got, "é&#124; é&#124;") || !strings.Contains(got, "…") {
			t.Errorf("annotation does not show the start of the error, clipped:\n%.2000s", got)
		}
		testutil.CheckMarkdownTables(t, got)
	})
	t.Run("many runs are cut at the limit", func(t *testing.T) {
		t.Parallel()
		s := summary.Summary{Recipe: "r-mi300x", GPU: "MI300X", NumGPUs: 1, TP: 1, Model: "m", Verdict: summary.VerdictError}
		for i := range 20000 {
			s.Bench = append(s.Bench, summary.BenchRun{Name: fmt.Sprintf("run-é-%d", i), Status: summary.StatusFailed, Error: strings.Repeat("é", 150)})
		}
		got := Render(s, "")
		if len(got) >= 1<<20 {
			t.Errorf("annotation is %d bytes, want under Buildkite's 1 MiB limit", len(got))
		}
		testutil.CheckMarkdownTables(t, got)
		if !strings.HasSuffix(got, Truncated) {
			t.Errorf("annotation ends %q, want the note that it was cut", got[len(got)-200:])
		}
		if !utf8.ValidString(got) {
			t.Error("annotation is not valid UTF-8: the cut split a character")
		}
	})
}

func TestClip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"longer text", 6, "longer…"},
		{"héllo", 2, "h…"}, // byte 2 is inside é
		{"héllo", 3, "hé…"},
		{"ééé", 0, "…"},
	}
	for _, tt := range tests {
		if got := Clip(tt.s, tt.n); got != tt.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
	}
}

func TestRenderDetector(t *testing.T) {
	t.Parallel()
	nasty := "x | y <b> `z`"
	v, base, delta := 90.0, 100.0, -10.0
	s := summary.Summary{Recipe: "r-h200", GPU: "H200", NumGPUs: 1, TP: 1, Model: "m", Verdict: summary.VerdictFail,
		Bench: []summary.BenchRun{{Name: "8k", Status: summary.StatusOK, OutputThroughput: 90}},
		Gates: []summary.GateResult{{Kind: summary.GateRegression, Subject: "8k", Metric: "output_throughput", Value: &v, Baseline: &base, DeltaPct: &delta,
			Verdict: summary.VerdictFail, Message: "m",
			Detector: &summary.Detector{Nights: 30, Used: 29, Outliers: 1, Repetitions: 3, RepMin: 89.5, RepMax: 90.5, Tonight: 90,
				NoiseCVPct: 0.8, FloorPct: 5, NoiseThresholdPct: 1.9, ThresholdPct: 5, WorsePct: 10, Rule: "single-night", Why: "flagged: " + nasty},
			ChangePoint: &summary.ChangePoint{Found: true, P: 1e-9, Before: 100, After: 90,
				LastGood: summary.NightRef{Build: 100, Value: 99.6, VLLMCommit: "abc0064", ImageDigest: "sha256:aa"},
				FirstBad: summary.NightRef{Tonight: true, Build: 101, Value: 90, VLLMCommit: "def4567"},
				Bisect:   []string{"git -C vllm rev-list --first-parent --reverse abc0064..def4567", "generator trigger --vllm-commit abc0064 --workloads-list r-h200 --bench-only --message 'a | b'"}}}},
	}
	got := Render(s, "")
	testutil.CheckMarkdownTables(t, got)
	for _, want := range []string{
		"| ❌ fail | 8k | `output_throughput` | 90.0 | 3 reps 89.5–90.5; noise CV 0.8 % over 29 nights | 100 | −10.0 % | 10.0 % | 5.0 % (5.0 %, 1.9 %) | flagged: x &#124; y &lt;b&gt; &#96;z&#96; |",
		"**8k `output_throughput` began** (change point p &lt; 0.0001, mean 100 then 90.0): last good #100 99.6 vLLM `abc0064` image `sha256:aa`, first bad tonight (#101) 90.0 vLLM `def4567`.",
		"- `git -C vllm rev-list --first-parent --reverse abc0064..def4567`",
		"- <code>generator trigger --vllm-commit abc0064 --workloads-list r-h200 --bench-only --message 'a &#124; b'</code>",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("annotation lacks %q:\n%s", want, got)
		}
	}
}

// The first line names a red night's class, and the blocked_by it was
// expected from.
func TestRenderNamesClass(t *testing.T) {
	t.Parallel()
	s := summary.Summary{Recipe: "r", Verdict: summary.VerdictError, Failure: &summary.Failure{Class: "vllm", Signature: "gpu-oom", BlockedBy: "vllm-project/vllm#1"},
		Phases: []summary.Phase{{Name: summary.PhaseReady, Status: summary.StatusFailed, Cause: "torch.OutOfMemoryError: HIP out of memory."}}}
	first, _, _ := strings.Cut(Render(s, ""), "\n")
	want := "### 💥 `r`: error (vllm: gpu-oom; blocked by vllm-project/vllm#1) — **ready** failed: torch.OutOfMemoryError: HIP out of memory."
	if first != want {
		t.Errorf("first line = %q, want %q", first, want)
	}
}

// The previous nights are the scheduled builds on the branch the history
// step reads (the pipeline's default branch unless overridden): the link
// goes there from a nightly and from a pull request's build alike, and
// never to a pull request's own branch, which holds none of them.
func TestRenderPreviousNightsLink(t *testing.T) {
	t.Parallel()
	const build = "https://buildkite.com/benchkite/benchkite-nightly/builds/111"
	tests := []struct {
		name string
		bk   *summary.BuildkiteInfo
		want string // the link's target; "" for no link
	}{
		{"nightly", &summary.BuildkiteInfo{BuildURL: build, Branch: "main", BaselineBranch: "main", Source: "schedule"},
			"https://buildkite.com/benchkite/benchkite-nightly/builds?branch=main"},
		{"pull request", &summary.BuildkiteInfo{BuildURL: build, Branch: "fewer-seqs", BaselineBranch: "main", Source: "webhook", PullRequest: "7"},
			"https://buildkite.com/benchkite/benchkite-nightly/builds?branch=main"},
		{"pull request, default branch unknown", &summary.BuildkiteInfo{BuildURL: build, Branch: "fewer-seqs", Source: "webhook", PullRequest: "7"},
			"https://buildkite.com/benchkite/benchkite-nightly/builds"},
		{"nightly, default branch unknown", &summary.BuildkiteInfo{BuildURL: build, Branch: "main", Source: "schedule"},
			"https://buildkite.com/benchkite/benchkite-nightly/builds"},
		{"baseline branch with a slash", &summary.BuildkiteInfo{BuildURL: build, Branch: "fewer-seqs", BaselineBranch: "release/v0.9"},
			"https://buildkite.com/benchkite/benchkite-nightly/builds?branch=release%2Fv0.9"},
		{"baseline branch that would end the link", &summary.BuildkiteInfo{BuildURL: build, BaselineBranch: "a)b [c]"},
			"https://buildkite.com/benchkite/benchkite-nightly/builds?branch=a%29b+%5Bc%5D"},
		{"no build URL", &summary.BuildkiteInfo{Branch: "fewer-seqs", BaselineBranch: "main"}, ""},
		{"not in Buildkite", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := summary.Summary{Recipe: "r-mi355x", GPU: "MI355X", NumGPUs: 1, TP: 1, Model: "m", Verdict: summary.VerdictPass, Buildkite: tt.bk}
			got := Render(s, "")
			target := ""
			const text = "[previous nights]("
			if i := strings.Index(got, text); i >= 0 {
				rest := got[i+len(text):]
				target = rest[:strings.IndexByte(rest, ')')]
			}
			if diff := cmp.Diff(tt.want, target); diff != "" {
				t.Errorf("previous nights link (-want +got):\n%s\nannotation:\n%s", diff, got)
			}
		})
	}
}

// The cause several unchecked gates share reads as a clause: no closing
// parenthesis of a clause it does not open.
func TestCommonCause(t *testing.T) {
	t.Parallel()
	tests := []struct {
		msgs []string
		want string
	}{
		{[]string{
			"gsm8k exact_match,flexible-extract = 0.9400: no baseline from minimax_m3-nospec-mi355x (no baseline: the build's history holds no nights of minimax_m3-nospec-mi355x (the history step was not asked for them))",
			"8k output_throughput = 3313: no baseline (no baseline: the build's history holds no nights of minimax_m3-mi355x (the history step was not asked for them))",
			"8k median_tpot_ms = 0.00412: no baseline (no baseline: the build's history holds no nights of minimax_m3-mi355x (the history step was not asked for them))",
		}, "the history step was not asked for them"},
		{[]string{
			"a = 1: no baseline (the API refused: 401 (unauthorized))",
			"b = 2: no baseline (the API refused: 401 (unauthorized))",
		}, "no baseline (the API refused: 401 (unauthorized))"},
		{[]string{"a = 1: too short", "b = 2: too short"}, ""},
		{[]string{"only one message, long enough to be a cause"}, ""},
	}
	for i, tt := range tests {
		if got := commonCause(tt.msgs); got != tt.want {
			t.Errorf("case %d: commonCause() = %q, want %q", i, got, tt.want)
		}
	}
}
