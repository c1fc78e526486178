package annotate

import (
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

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
			delta = Pct(*g.DeltaPct)
			if g.Verdict == summary.VerdictFail {
				delta = "❌ " + delta
			}
		}
		accept := "–"
		if sd := r.SpecDecode; sd != nil {
			accept = fmt.Sprintf("%s, mean length %s", Num(sd.AcceptanceRate, Percent), Thousands(sd.AcceptanceLength, 2))
			if len(sd.PerPosition) > 0 {
				pos := make([]string, len(sd.PerPosition))
				for i, p := range sd.PerPosition {
					pos[i] = Thousands(p*100, 0)
				}
				accept += "; by position " + strings.Join(pos, " / ") + " %"
			}
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s / %s | %s | %s | %s | ok |\n",
			Text(r.Name), r.Concurrency, Num(r.OutputThroughput, TokensPerSec), Num(r.OutputThroughputPerGPU, TokensPerSec), delta, Num(r.TotalTokenThroughput, TokensPerSec),
			Num(r.TTFT.Median, Millis), Num(r.TTFT.P99, Millis), Num(r.TPOT.Median, Millis), Num(r.ITL.Median, Millis), accept)
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
				base = Num(*g.Baseline, Score)
				delta = fmt.Sprintf("%s (%s)", signed(t.Metrics[k]-*g.Baseline), Pct((t.Metrics[k]-*g.Baseline) / *g.Baseline * 100))
				if g.Verdict == summary.VerdictFail {
					delta = "❌ " + delta
				}
			}
			stderr := ""
			if v, ok := t.Stderr[k]; ok {
				stderr = Num(v, Score)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", Text(t.Task), InlineCode(k), Num(t.Metrics[k], Score), stderr, base, delta)
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
			delta = Pct(*g.DeltaPct)
		}
		value := "–" // not measured
		if g.Value != nil {
			value = Num(*g.Value, UnitOf(g.Metric))
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
		u := UnitOf(g.Metric)
		reps = fmt.Sprintf("%d reps %s–%s", d.Repetitions, Num(d.RepMin, u), Num(d.RepMax, u))
	}
	return fmt.Sprintf("%s; noise CV %s over %d nights", reps, Num(d.NoiseCVPct, Percent), d.Used)
}

// gatesWhere is s's gates that keep holds for, in order.
func gatesWhere(s summary.Summary, keep func(summary.GateResult) bool) []summary.GateResult {
	var out []summary.GateResult
	for _, g := range s.Gates {
		if keep(g) {
			out = append(out, g)
		}
	}
	return out
}

// writePairedTable shows each baseline_from gate's per-question test:
// agreement, the discordant counts b and c and McNemar's exact p.
func writePairedTable(b *strings.Builder, s summary.Summary) {
	gates := gatesWhere(s, func(g summary.GateResult) bool { return g.Paired != nil })
	if len(gates) == 0 {
		return
	}
	b.WriteString("#### Per-question comparisons\n\n")
	b.WriteString("| verdict | task | metric | against | pairs | agree | b (right only without) | c (right only with) | Δ | McNemar p | α |\n|---|---|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, g := range gates {
		p := g.Paired
		fmt.Fprintf(b, "| %s %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", VerdictMark(g.Verdict), Text(g.Verdict), Text(g.Subject), InlineCode(g.Metric),
			InlineCode(p.Against), Thousands(float64(p.Pairs), 0), Num(p.Agreement*100, Percent), Thousands(float64(p.B), 0), Thousands(float64(p.C), 0), signed(p.Delta), PValue(p.P), Num(p.Alpha, Plain))
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
	gates := gatesWhere(s, func(g summary.GateResult) bool {
		return g.Kind == summary.GateRegression && g.Detector != nil
	})
	if len(gates) == 0 {
		return
	}
	b.WriteString("#### Regression detector\n\n")
	b.WriteString("| verdict | run | metric | tonight | spread | baseline | Δ | worse by | threshold (floor, noise) | why |\n|---|---|---|--:|---|--:|--:|--:|---|---|\n")
	for _, g := range gates {
		d := g.Detector
		u := UnitOf(g.Metric)
		base, delta, thr := "–", "", "floor "+Num(d.FloorPct, Percent)
		if g.Baseline != nil {
			base = Num(*g.Baseline, u)
			thr = fmt.Sprintf("%s (%s, %s)", Num(d.ThresholdPct, Percent), Num(d.FloorPct, Percent), Num(d.NoiseThresholdPct, Percent))
		}
		if g.DeltaPct != nil {
			delta = Pct(*g.DeltaPct)
		}
		worse := ""
		if g.Baseline != nil {
			worse = Num(d.WorsePct, Percent)
		}
		why := d.Why
		if d.ReducedPower {
			why += fmt.Sprintf(" (only %d nights: reduced power)", d.Used)
		}
		fmt.Fprintf(b, "| %s %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", VerdictMark(g.Verdict), Text(g.Verdict), Text(g.Subject), InlineCode(g.Metric),
			Num(d.Tonight, u), Text(Spread(g)), base, delta, worse, thr, Text(Clip(why, 400)))
	}
	b.WriteString("\n")
	for _, g := range gates {
		cp := g.ChangePoint
		if cp == nil {
			continue
		}
		how := "no significant change point; the last night and tonight"
		if cp.Found {
			u := UnitOf(g.Metric)
			how = fmt.Sprintf("change point p %s, mean %s then %s", PValue(cp.P), Num(cp.Before, u), Num(cp.After, u))
		}
		fmt.Fprintf(b, "**%s %s began** (%s): last good %s, first bad %s.\n\n", Text(g.Subject), InlineCode(g.Metric), Text(how), nightText(cp.LastGood, UnitOf(g.Metric)), nightText(cp.FirstBad, UnitOf(g.Metric)))
		if len(cp.Bisect) > 0 {
			b.WriteString("To bisect between them:\n\n")
			for _, line := range cp.Bisect {
				fmt.Fprintf(b, "- %s\n", InlineCode(line))
			}
			b.WriteString("\nthen trigger the middle commit of that list the same way, and halve again.\n\n")
		}
	}
}

func nightText(r summary.NightRef, u Unit) string {
	var parts []string
	switch {
	case r.Tonight && r.Build > 0:
		parts = append(parts, fmt.Sprintf("tonight (#%d)", r.Build))
	case r.Tonight:
		parts = append(parts, "tonight")
	default:
		parts = append(parts, fmt.Sprintf("#%d", r.Build))
	}
	parts = append(parts, Num(r.Value, u))
	if r.VLLMCommit != "" {
		parts = append(parts, "vLLM "+InlineCode(r.VLLMCommit))
	}
	if r.ImageDigest != "" {
		parts = append(parts, "image "+InlineCode(r.ImageDigest))
	}
	return strings.Join(parts, " ")
}

// signed is a difference of scores with its sign, "+0.0123" or "−0.0300".
func signed(v float64) string {
	s := Thousands(v, 4)
	if !strings.HasPrefix(s, "−") {
		s = "+" + s
	}
	return s
}
