// Package annotate renders a run's Buildkite annotation from its summary:
// the verdict, what ran, the failures, the bench and accuracy tables with
// their baselines, the gates and the trend picture.
package annotate

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/benchkite/benchkite/runner/internal/startup"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// MaxBody is Buildkite's limit on an annotation body (1 MiB), less a
// margin.
const MaxBody = 1<<20 - 4096

// VerdictMark is the emoji that stands for a verdict.
func VerdictMark(v string) string {
	switch v {
	case summary.VerdictPass:
		return "✅"
	case summary.VerdictFail:
		return "❌"
	case summary.VerdictNoBaseline, summary.VerdictSkipped, summary.VerdictUnverified:
		return "⚠️"
	}
	return "💥"
}

// Clip shortens s to at most n bytes plus an ellipsis, never splitting a
// character.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return CutUTF8(s, n) + "…"
}

// CutUTF8 is s[:n] moved back to the start of a character.
func CutUTF8(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Render is the per-recipe annotation, top to bottom: a one-line
// verdict with its reason (the failing phase and its cause, or the first
// failed gate), the headline numbers against their baselines and limits,
// links (job log, artifacts, trend page, previous nights, the vLLM commits
// between the last good and the first bad night), and the details
// (every run, the detector, accuracy, gates) in a collapsed block. Each
// failure is said once.
func Render(s summary.Summary, trendArtifact string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s %s: %s%s — %s\n\n", VerdictMark(s.Verdict), InlineCode(s.Recipe), VerdictWords(s), ClassTag(s.Failure), Reason(s))
	writeContext(&b, s)
	if line := modelCacheLine(s.ModelCache); line != "" {
		b.WriteString(line + "\n\n")
	}
	if s.Startup != nil {
		b.WriteString("**Start-up:** " + Text(startup.Describe(*s.Startup)) + " (as vLLM logged it)\n\n")
	}
	if s.Series != "" {
		fmt.Fprintf(&b, "**Recipe changed:** %s. A known change point: tonight is still judged against the nights before it, but for a bench run whose own shape changed.\n\n", Text(s.Series))
	}
	writeOtherFailures(&b, s)
	writeHeadline(&b, s)
	b.WriteString(costLine(s))
	writeLinks(&b, s)
	b.WriteString("<details><summary>Details: every run, the regression detector, accuracy and gates</summary>\n\n")
	writeUncheckedDetails(&b, s)
	writeBenchTable(&b, s)
	WriteCostTable(&b, s)
	writeDetectorTable(&b, s)
	writePairedTable(&b, s)
	writeAccuracyTable(&b, s)
	writeGateTable(&b, s)
	if trendArtifact != "" {
		fmt.Fprintf(&b, "<img src=\"artifact://%s\" alt=\"%s trend\">\n\n", HTMLAttr(trendArtifact), HTMLAttr(s.Recipe))
	}
	b.WriteString("</details>\n")
	return Cap(b.String(), MaxBody)
}

// VerdictWords is the verdict as the headline says it: a canceled run
// says so there ("error: canceled"), not only in its details.
func VerdictWords(s summary.Summary) string {
	if s.Canceled != "" {
		return Text(s.Verdict) + ": canceled"
	}
	return Text(s.Verdict)
}

// ClassTag names a red night's class and signature after its verdict,
// " (vllm: gpu-oom)", and the blocked_by it was expected from; "" when
// the night has no class.
func ClassTag(f *summary.Failure) string {
	if f == nil || f.Class == "" {
		return ""
	}
	t := " (" + Text(f.Class) + ": " + Text(f.Signature)
	if f.BlockedBy != "" {
		t += "; blocked by " + Text(f.BlockedBy)
	}
	return t + ")"
}

// writeContext is the line under the verdict: where and what ran.
func writeContext(b *strings.Builder, s summary.Summary) {
	fmt.Fprintf(b, "%s × %d · TP %d", Text(s.GPU), s.NumGPUs, s.TP)
	if s.DP > 1 {
		fmt.Fprintf(b, " × DP %d", s.DP)
	}
	if s.Precision != "" {
		fmt.Fprintf(b, " · %s", Text(s.Precision))
		if s.PrecisionGuessed {
			b.WriteString(" (guessed: the model name does not say; set vllm_bench.metadata.precision)")
		}
	}
	fmt.Fprintf(b, " · %s", InlineCode(s.Model))
	if s.Attached != "" {
		fmt.Fprintf(b, " · measured the attached server %s, not started by this run (image unknown)", InlineCode(s.Attached))
	} else if s.Image != "" {
		fmt.Fprintf(b, " · image %s", InlineCode(s.Image))
		if s.ImageDigest == "" {
			b.WriteString(" (tag, not pinned)")
		}
	}
	if s.VLLMCommit != "" {
		fmt.Fprintf(b, " · vLLM %s", InlineCode(s.VLLMCommit))
	}
	b.WriteString("\n\n")
}

// headline is one row of the headline table.
type headline struct {
	what, tonight, base, delta, limit, mark string
}

// writeHeadline is the numbers a person looks at first: the first bench
// run's throughput per GPU and latencies, EAGLE acceptance, and every
// accuracy score with a gate, each against its baseline and limit.
func writeHeadline(b *strings.Builder, s summary.Summary) {
	var rows []headline
	gates := map[string]summary.GateResult{}
	for _, g := range s.Gates {
		if g.Kind == summary.GateRegression || g.Kind == summary.GateAccuracy || g.Kind == summary.GateBench {
			k := g.Subject + "\x00" + g.Metric
			if _, ok := gates[k]; !ok || g.Verdict == summary.VerdictFail {
				gates[k] = g
			}
		}
	}
	per := 1.0
	if s.NumGPUs > 0 {
		per = float64(s.NumGPUs)
	}
	row := func(what string, v float64, u Unit, subject string, metrics []string, scale float64) {
		r := headline{what: what, tonight: Num(v, u)}
		for _, m := range metrics {
			g, ok := gates[subject+"\x00"+m]
			if !ok {
				continue
			}
			if g.Baseline != nil {
				r.base = Num(*g.Baseline/scale, u)
			}
			if g.DeltaPct != nil {
				r.delta = Pct(*g.DeltaPct)
			}
			r.limit, r.mark = Limit(g), VerdictMark(g.Verdict)
			break
		}
		rows = append(rows, r)
	}
	for _, r := range s.Bench {
		if r.Status != summary.StatusOK {
			continue
		}
		name := Text(r.Name)
		row("output tok/s per GPU · "+name, r.OutputThroughputPerGPU, TokensPerSec, r.Name, []string{"output_throughput"}, per)
		row("TTFT p50 ms", r.TTFT.Median, Millis, r.Name, []string{"median_ttft_ms"}, 1)
		row("TPOT p50 ms", r.TPOT.Median, Millis, r.Name, []string{"median_tpot_ms"}, 1)
		if r.SpecDecode != nil {
			row("EAGLE acceptance", r.SpecDecode.AcceptanceRate, Percent, r.Name, []string{"spec_decode_acceptance_rate"}, 1)
		}
		break
	}
	for _, t := range s.Accuracy {
		if t.Status != summary.StatusOK {
			continue
		}
		for _, k := range summary.SortedKeys(t.Metrics) {
			if _, ok := gates[t.Task+"\x00"+k]; ok {
				row(Text(t.Task)+" "+InlineCode(k), t.Metrics[k], Score, t.Task, []string{k}, 1)
			}
		}
	}
	if len(rows) == 0 {
		return
	}
	b.WriteString("| | tonight | baseline | Δ | limit | |\n|---|--:|--:|--:|--:|---|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", r.what, r.tonight, r.base, r.delta, r.limit, r.mark)
	}
	b.WriteString("\n")
}

// modelCacheLine says where the model came from: the cache, whether it
// outlives the job, and the download this run made, if any.
func modelCacheLine(mc *summary.ModelCache) string {
	if mc == nil {
		return ""
	}
	kept := "kept on the node"
	if !mc.Persistent {
		kept = "not kept: every job downloads the model again"
	}
	line := fmt.Sprintf("Model cache %s (%s; %s)", InlineCode(mc.Dir), Text(mc.Backing), kept)
	switch {
	case mc.DownloadedBytes > 0:
		line += fmt.Sprintf(" · downloaded %.1f GB; the server was ready after %s", float64(mc.DownloadedBytes)/1e9, time.Duration(mc.ReadySeconds*float64(time.Second)))
	case mc.DownloadedBytes == 0 && mc.ReadySeconds > 0:
		line += " · nothing downloaded"
	}
	return line
}
