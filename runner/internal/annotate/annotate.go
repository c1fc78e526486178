// Package annotate renders a run's Buildkite annotation from its summary:
// the verdict, what ran, the failures, the bench and accuracy tables with
// their baselines, the gates and the trend picture.
package annotate

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

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

// Style is the annotation style of a run: success only for a pass;
// unverified (something could not be checked) is a warning, never green;
// fail and error are errors.
func Style(s summary.Summary) string {
	switch s.Verdict {
	case summary.VerdictPass:
		for _, g := range s.Gates {
			if g.Verdict == summary.VerdictNoBaseline || g.Verdict == summary.VerdictUnverified {
				return "warning" // a pass written before unverified existed
			}
		}
		return "success"
	case summary.VerdictUnverified:
		return "warning"
	}
	return "error"
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

// Render is the per-recipe annotation: verdict, what ran, the
// failures, bench and accuracy tables with their baselines, the gates,
// and the trend picture when there is one.
func Render(s summary.Summary, trendArtifact string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s %s: %s\n\n", VerdictMark(s.Verdict), InlineCode(s.Recipe), Text(s.Verdict))
	fmt.Fprintf(&b, "%s × %d · TP %d", Text(s.GPU), s.NumGPUs, s.TP)
	if s.DP > 1 {
		fmt.Fprintf(&b, " × DP %d", s.DP)
	}
	if s.Precision != "" {
		fmt.Fprintf(&b, " · %s", Text(s.Precision))
	}
	fmt.Fprintf(&b, " · %s", InlineCode(s.Model))
	if s.Image != "" {
		fmt.Fprintf(&b, " · image %s", InlineCode(s.Image))
		if s.ImageDigest == "" {
			b.WriteString(" (tag, not pinned)")
		}
	}
	if s.VLLMCommit != "" {
		fmt.Fprintf(&b, " · vLLM %s", InlineCode(s.VLLMCommit))
	}
	b.WriteString("\n\n")
	if line := modelCacheLine(s.ModelCache); line != "" {
		b.WriteString(line + "\n\n")
	}
	if s.Series != "" {
		fmt.Fprintf(&b, "**New series:** %s. Nights before it ran another configuration and are not compared.\n\n", Text(s.Series))
	}

	var failures []string
	for _, p := range s.Phases {
		if p.Status == summary.StatusFailed || p.Status == summary.StatusCanceled || p.Status == summary.StatusNotRun {
			failures = append(failures, fmt.Sprintf("**%s** %s: %s", Text(p.Name), Text(p.Status), Text(Clip(p.Error, 600))))
		}
	}
	for _, g := range s.Gates {
		if g.Verdict == summary.VerdictError {
			failures = append(failures, "**gate** error: "+Text(Clip(g.Message, 600)))
		}
	}
	if len(failures) == 0 && s.Verdict == summary.VerdictError {
		for _, p := range s.Problems {
			failures = append(failures, Text(Clip(p, 600)))
		}
	}
	if len(failures) > 0 {
		b.WriteString("**Failures**\n\n")
		for _, f := range failures {
			fmt.Fprintf(&b, "- %s\n", f)
		}
		b.WriteString("\n")
	}
	var unchecked []string
	for _, g := range s.Gates {
		if g.Verdict == summary.VerdictNoBaseline || g.Verdict == summary.VerdictUnverified {
			unchecked = append(unchecked, Text(Clip(g.Message, 400)))
		}
	}
	if len(unchecked) > 0 {
		b.WriteString("**Could not be checked** (unverified: a warning, not a pass)\n\n")
		for _, u := range unchecked {
			fmt.Fprintf(&b, "- %s\n", u)
		}
		b.WriteString("\n")
	}
	writeBenchTable(&b, s)
	writeDetectorTable(&b, s)
	writePairedTable(&b, s)
	writeAccuracyTable(&b, s)
	writeGateTable(&b, s)
	if trendArtifact != "" {
		fmt.Fprintf(&b, "<img src=\"artifact://%s\" alt=\"%s trend\">\n", HTMLAttr(trendArtifact), HTMLAttr(s.Recipe))
	}
	return Cap(b.String(), MaxBody)
}

func writeBenchTable(b *strings.Builder, s summary.Summary) {
	if len(s.Bench) == 0 {
		return
	}
	regress := map[string]summary.GateResult{}
	for _, g := range s.Gates {
		if g.Kind == summary.GateRegression {
			regress[g.Subject+"\x00"+g.Metric] = g
		}
	}
	b.WriteString("#### Throughput and latency\n\n")
	b.WriteString("| run | conc | output tok/s | per GPU | Δ vs nights | total tok/s | TTFT p50 / p99 ms | TPOT p50 ms | ITL p50 ms | EAGLE acceptance | status |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|\n")
	for _, r := range s.Bench {
		if r.Status != summary.StatusOK {
			fmt.Fprintf(b, "| %s | %d | | | | | | | | | ❌ %s: %s |\n", Text(r.Name), r.Concurrency, Text(r.Status), Text(Clip(r.Error, 300)))
			continue
		}
		delta := ""
		if g, ok := regress[r.Name+"\x00output_throughput"]; ok && g.DeltaPct != nil {
			delta = fmt.Sprintf("%+.1f%%", *g.DeltaPct)
			if g.Verdict == summary.VerdictFail {
				delta = "❌ " + delta
			}
		}
		accept := "–"
		if sd := r.SpecDecode; sd != nil {
			accept = fmt.Sprintf("%.1f%%, mean length %.2f", sd.AcceptanceRate, sd.AcceptanceLength)
		}
		fmt.Fprintf(b, "| %s | %d | %.1f | %.1f | %s | %.1f | %.1f / %.1f | %.2f | %.2f | %s | ok |\n",
			Text(r.Name), r.Concurrency, r.OutputThroughput, r.OutputThroughputPerGPU, delta, r.TotalTokenThroughput,
			r.TTFT.Median, r.TTFT.P99, r.TPOT.Median, r.ITL.Median, accept)
	}
	b.WriteString("\n")
}

func writeAccuracyTable(b *strings.Builder, s summary.Summary) {
	if len(s.Accuracy) == 0 {
		return
	}
	gates := map[string]summary.GateResult{}
	for _, g := range s.Gates {
		if g.Kind == summary.GateAccuracy && g.Baseline != nil {
			gates[g.Subject+"\x00"+g.Metric] = g
		}
	}
	b.WriteString("#### Accuracy\n\n| task | metric | score | stderr | baseline | Δ |\n|---|---|--:|--:|--:|--:|\n")
	for _, t := range s.Accuracy {
		if t.Status != summary.StatusOK {
			fmt.Fprintf(b, "| %s | | | | | ❌ %s: %s |\n", Text(t.Task), Text(t.Status), Text(Clip(t.Error, 300)))
			continue
		}
		for _, k := range summary.SortedKeys(t.Metrics) {
			base, delta := "", ""
			if g, ok := gates[t.Task+"\x00"+k]; ok {
				base = fmt.Sprintf("%.4f", *g.Baseline)
				delta = fmt.Sprintf("%+.4f", t.Metrics[k]-*g.Baseline)
				if g.Verdict == summary.VerdictFail {
					delta = "❌ " + delta
				}
			}
			stderr := ""
			if v, ok := t.Stderr[k]; ok {
				stderr = fmt.Sprintf("%.4f", v)
			}
			fmt.Fprintf(b, "| %s | %s | %.4f | %s | %s | %s |\n", Text(t.Task), InlineCode(k), t.Metrics[k], stderr, base, delta)
		}
	}
	b.WriteString("\n")
}

func writeGateTable(b *strings.Builder, s summary.Summary) {
	if len(s.Gates) == 0 {
		return
	}
	b.WriteString("#### Gates\n\n| verdict | kind | on | metric | value | bound | Δ% |\n|---|---|---|---|--:|---|--:|\n")
	for _, g := range s.Gates {
		delta := ""
		if g.DeltaPct != nil {
			delta = fmt.Sprintf("%+.1f%%", *g.DeltaPct)
		}
		value := "–" // not measured
		if g.Value != nil {
			value = fmt.Sprintf("%.4g", *g.Value)
		}
		fmt.Fprintf(b, "| %s %s | %s | %s | %s | %s | %s | %s |\n", VerdictMark(g.Verdict), Text(g.Verdict), Text(g.Kind), Text(g.Subject), InlineCode(g.Metric), value, Text(Clip(g.Bound, 200)), delta)
	}
	b.WriteString("\n")
}

// Spread is a regression gate's reading in a few words: tonight's
// repetitions (their range when several) and the history's noise, for a
// table cell.
func Spread(g summary.GateResult) string {
	d := g.Detector
	if d == nil {
		return ""
	}
	reps := "1 run"
	if d.Repetitions > 1 {
		reps = fmt.Sprintf("%d reps %.4g–%.4g", d.Repetitions, d.RepMin, d.RepMax)
	}
	return fmt.Sprintf("%s; noise CV %.1f%% over %d nights", reps, d.NoiseCVPct, d.Used)
}

// writePairedTable shows each baseline_from gate's per-question test:
// agreement, the discordant counts b and c and McNemar's exact p.
func writePairedTable(b *strings.Builder, s summary.Summary) {
	var gates []summary.GateResult
	for _, g := range s.Gates {
		if g.Paired != nil {
			gates = append(gates, g)
		}
	}
	if len(gates) == 0 {
		return
	}
	b.WriteString("#### Per-question comparisons\n\n")
	b.WriteString("| verdict | task | metric | against | pairs | agree | b (right only without) | c (right only with) | Δ | McNemar p | α |\n|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, g := range gates {
		p := g.Paired
		fmt.Fprintf(b, "| %s %s | %s | %s | %s | %d | %.1f%% | %d | %d | %+.4f | %.3g | %g |\n", VerdictMark(g.Verdict), Text(g.Verdict), Text(g.Subject), InlineCode(g.Metric),
			InlineCode(p.Against), p.Pairs, p.Agreement*100, p.B, p.C, p.Delta, p.P, p.Alpha)
	}
	b.WriteString("\n")
	for _, g := range gates {
		if g.Paired.Note != "" {
			fmt.Fprintf(b, "- %s %s: %s\n", Text(g.Subject), InlineCode(g.Paired.Against), Text(Clip(g.Paired.Note, 400)))
		}
	}
}

// writeDetectorTable shows, per regression gate the detector judged, the
// spread it judged by, its threshold and why it did or did not flag, and
// where a flagged regression began.
func writeDetectorTable(b *strings.Builder, s summary.Summary) {
	var gates []summary.GateResult
	for _, g := range s.Gates {
		if g.Kind == summary.GateRegression && g.Detector != nil {
			gates = append(gates, g)
		}
	}
	if len(gates) == 0 {
		return
	}
	b.WriteString("#### Regression detector\n\n")
	b.WriteString("| verdict | run | metric | tonight | spread | baseline | Δ | worse by | threshold (floor, noise) | why |\n|---|---|---|--:|---|--:|--:|--:|---|---|\n")
	for _, g := range gates {
		d := g.Detector
		base, delta, thr := "–", "", fmt.Sprintf("floor %g%%", d.FloorPct)
		if g.Baseline != nil {
			base = fmt.Sprintf("%.4g", *g.Baseline)
			thr = fmt.Sprintf("%.1f%% (%g%%, %.1f%%)", d.ThresholdPct, d.FloorPct, d.NoiseThresholdPct)
		}
		if g.DeltaPct != nil {
			delta = fmt.Sprintf("%+.1f%%", *g.DeltaPct)
		}
		worse := ""
		if g.Baseline != nil {
			worse = fmt.Sprintf("%.1f%%", d.WorsePct)
		}
		why := d.Why
		if d.ReducedPower {
			why += fmt.Sprintf(" (only %d nights: reduced power)", d.Used)
		}
		fmt.Fprintf(b, "| %s %s | %s | %s | %.4g | %s | %s | %s | %s | %s | %s |\n", VerdictMark(g.Verdict), Text(g.Verdict), Text(g.Subject), InlineCode(g.Metric),
			d.Tonight, Text(Spread(g)), base, delta, worse, thr, Text(Clip(why, 400)))
	}
	b.WriteString("\n")
	for _, g := range gates {
		cp := g.ChangePoint
		if cp == nil {
			continue
		}
		how := "no significant change point; the last night and tonight"
		if cp.Found {
			how = fmt.Sprintf("change point p = %.2g, mean %.4g then %.4g", cp.P, cp.Before, cp.After)
		}
		fmt.Fprintf(b, "**%s %s began** (%s): last good %s, first bad %s.\n\n", Text(g.Subject), InlineCode(g.Metric), Text(how), nightText(cp.LastGood), nightText(cp.FirstBad))
		if len(cp.Bisect) > 0 {
			b.WriteString("To bisect between them:\n\n")
			for _, line := range cp.Bisect {
				fmt.Fprintf(b, "- %s\n", InlineCode(line))
			}
			b.WriteString("\nthen trigger the middle commit of that list the same way, and halve again.\n\n")
		}
	}
}

func nightText(r summary.NightRef) string {
	var parts []string
	switch {
	case r.Tonight && r.Build > 0:
		parts = append(parts, fmt.Sprintf("tonight (#%d)", r.Build))
	case r.Tonight:
		parts = append(parts, "tonight")
	default:
		parts = append(parts, fmt.Sprintf("#%d", r.Build))
	}
	parts = append(parts, fmt.Sprintf("%.4g", r.Value))
	if r.VLLMCommit != "" {
		parts = append(parts, "vLLM "+InlineCode(r.VLLMCommit))
	}
	if r.ImageDigest != "" {
		parts = append(parts, "image "+InlineCode(r.ImageDigest))
	}
	return strings.Join(parts, " ")
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
