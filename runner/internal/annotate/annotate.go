// Package annotate renders a run's Buildkite annotation from its summary:
// the verdict, what ran, the failures, the bench and accuracy tables with
// their baselines, the gates and the trend picture.
package annotate

import (
	"fmt"
	"net/url"
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

// failedPhase is the first phase that failed or was canceled: the one the
// verdict names. Phases that did not run after it are its consequence.
func failedPhase(s summary.Summary) *summary.Phase {
	for i, p := range s.Phases {
		if (p.Status == summary.StatusFailed || p.Status == summary.StatusCanceled) && !gatesSayIt(s, p) {
			return &s.Phases[i]
		}
	}
	// A server lost between phases fails none: the first phase it kept
	// from running says why.
	for i, p := range s.Phases {
		if p.Status == summary.StatusNotRun && strings.TrimSpace(p.Error) != "" {
			return &s.Phases[i]
		}
	}
	return nil
}

// gatesSayIt is true for the gate phase of a run whose gates failed: the
// failed gates are the failure, told with their numbers.
func gatesSayIt(s summary.Summary, p summary.Phase) bool {
	if p.Name != summary.PhaseGate || p.Status != summary.StatusFailed {
		return false
	}
	for _, g := range s.Gates {
		if g.Verdict == summary.VerdictFail {
			return true
		}
	}
	return false
}

// CauseLine is what a failed phase says in one line: its cause when the
// runner found one, else its error, clipped.
func CauseLine(p summary.Phase) string {
	c := strings.TrimSpace(p.Cause)
	if c == "" {
		c = strings.TrimSpace(p.Error)
	}
	if c == "" {
		return p.Status
	}
	return Clip(c, 240)
}

// Reason is the verdict's reason in one line of Markdown: the failing
// phase and its cause, the first failed gate with its numbers, or what
// could not be checked.
func Reason(s summary.Summary) string {
	var failed, unchecked []summary.GateResult
	passed := 0
	for _, g := range s.Gates {
		switch g.Verdict {
		case summary.VerdictFail:
			failed = append(failed, g)
		case summary.VerdictNoBaseline, summary.VerdictUnverified:
			unchecked = append(unchecked, g)
		case summary.VerdictPass:
			passed++
		}
	}
	more := func(n int, what string) string {
		if n <= 0 {
			return ""
		}
		return fmt.Sprintf(" (and %s)", plural(n, "more "+what))
	}
	if p := failedPhase(s); p != nil && s.Verdict != summary.VerdictPass {
		return fmt.Sprintf("**%s** %s: %s", Text(p.Name), Text(p.Status), Text(CauseLine(*p)))
	}
	switch {
	case len(failed) > 0:
		return gateReason(s, failed[0]) + more(len(failed)-1, "failed gate")
	case s.Verdict == summary.VerdictError:
		for _, g := range s.Gates {
			if g.Verdict == summary.VerdictError {
				return "**gate** error: " + Text(Clip(g.Message, 240))
			}
		}
		if len(s.Problems) > 0 {
			return Text(Clip(s.Problems[0], 240)) + more(len(s.Problems)-1, "problem")
		}
		return "the run could not be judged"
	case len(unchecked) > 0:
		if cause := uncheckedCause(unchecked); cause != "" {
			var names []string
			for _, g := range unchecked {
				names = append(names, Text(g.Subject)+" "+InlineCode(g.Metric))
			}
			return fmt.Sprintf("%s could not be made (%s): %s", plural(len(unchecked), "check"), strings.Join(names, ", "), Text(Clip(cause, 240)))
		}
		return fmt.Sprintf("%s could not be made: %s%s", plural(len(unchecked), "check"), Text(Clip(unchecked[0].Message, 240)), more(len(unchecked)-1, "check"))
	case s.Verdict == summary.VerdictUnverified && len(s.Problems) > 0:
		return Text(Clip(s.Problems[0], 240))
	}
	return fmt.Sprintf("%s passed", plural(passed, "gate"))
}

// uncheckedCause is the one reason all unchecked gates share, or "".
func uncheckedCause(gates []summary.GateResult) string {
	var msgs []string
	for _, g := range gates {
		msgs = append(msgs, g.Message)
	}
	return commonCause(msgs)
}

// gateReason is one failed gate in words: what, tonight against the
// baseline, by how much and the limit.
func gateReason(s summary.Summary, g summary.GateResult) string {
	what := Text(g.Subject) + " " + InlineCode(g.Metric)
	if g.Baseline == nil && g.Message != "" {
		return Text(Clip(g.Message, 240)) // an absolute bound says it best in its own words
	}
	if g.Value == nil {
		return what + ": " + Text(Clip(g.Message, 240))
	}
	u := UnitOf(g.Metric)
	// Throughput reads per GPU, as in the table below it.
	scale := 1.0
	if g.Metric == "output_throughput" && s.NumGPUs > 1 {
		scale = float64(s.NumGPUs)
		what = Text(g.Subject) + " output tok/s per GPU"
	}
	out := what + " " + Num(*g.Value/scale, u)
	if g.Baseline != nil {
		out += " vs " + Num(*g.Baseline/scale, u)
	}
	if g.DeltaPct != nil {
		out += " (" + Pct(*g.DeltaPct)
		if l := Limit(g); l != "" {
			out += ", limit " + l
		}
		out += ")"
	} else if l := Limit(g); l != "" {
		out += ", must be " + l
	}
	return out
}

// Limit is a judged gate's threshold in the words of its table cell: the
// detector's allowed worsening, or the gate's bound.
func Limit(g summary.GateResult) string {
	if d := g.Detector; d != nil && g.Baseline != nil {
		sign := "−"
		if strings.HasSuffix(g.Metric, "_ms") {
			sign = "+"
		}
		return sign + Thousands(d.ThresholdPct, 1) + " %"
	}
	// ">= 0.9250 (baseline 0.9400 - 0.015)": the number is the limit; the
	// details table has the rest, and the words of a bound not yet known.
	if bound, _, _ := strings.Cut(g.Bound, " ("); strings.HasPrefix(bound, ">") || strings.HasPrefix(bound, "<") {
		bound = strings.NewReplacer(">=", "≥", "<=", "≤").Replace(bound)
		return Text(Clip(bound, 80))
	}
	return ""
}

// commonCause is what every one of msgs ends with, when that is a cause
// worth saying once: "no baseline: no Buildkite API token …". "" when they
// differ.
func commonCause(msgs []string) string {
	if len(msgs) < 2 {
		return ""
	}
	suffix := msgs[0]
	for _, m := range msgs[1:] {
		i := 0
		for i < len(suffix) && i < len(m) && suffix[len(suffix)-1-i] == m[len(m)-1-i] {
			i++
		}
		suffix = suffix[len(suffix)-i:]
	}
	// Start at a clause: after "(" or ": ".
	if i := strings.IndexAny(suffix, "(:"); i >= 0 {
		suffix = suffix[i+1:]
	}
	// Drop the closing parentheses of clauses the suffix does not open.
	suffix = strings.TrimSpace(suffix)
	for strings.HasSuffix(suffix, ")") && strings.Count(suffix, ")") > strings.Count(suffix, "(") {
		suffix = strings.TrimSpace(strings.TrimSuffix(suffix, ")"))
	}
	if len(suffix) < 20 {
		return ""
	}
	return suffix
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// writeOtherFailures lists the failures the verdict line did not name:
// later failed phases, phases kept from running (with their reason when
// it is not the first failure's), gate errors, checks that could not be
// made, problems. Each once.
func writeOtherFailures(b *strings.Builder, s summary.Summary) {
	first := failedPhase(s)
	l := newFailureLines(first)
	l.addPhases(s, first)
	reason := Reason(s)
	l.addGateErrors(s, first, reason)
	l.addUnchecked(s, first)
	// Problems restate the phases and gates above; alone they are the news.
	if s.Verdict == summary.VerdictError && first == nil && len(l.lines) == 0 {
		l.addProblems(s, reason)
	}
	if len(l.lines) == 0 {
		return
	}
	for _, line := range l.lines {
		fmt.Fprintf(b, "- %s\n", line)
	}
	b.WriteString("\n")
}

// failureLines are the lines of writeOtherFailures, with the causes they
// said, so that each is said once.
type failureLines struct {
	said  map[string]bool
	lines []string
}

// newFailureLines starts the lines with the first failed phase's cause
// said: the verdict line names it.
func newFailureLines(first *summary.Phase) *failureLines {
	l := &failureLines{said: map[string]bool{}}
	if first != nil {
		l.said[CauseLine(*first)] = true
		l.said[strings.TrimSpace(first.Error)] = true
	}
	return l
}

// add appends line unless its cause key was said already.
func (l *failureLines) add(key, line string) {
	if key != "" && l.said[key] {
		return
	}
	l.said[key] = true
	l.lines = append(l.lines, line)
}

// addPhases lists the failed phases after the first, and the phases kept
// from running: with their own reason when no phase failed, else named
// together as its consequence.
func (l *failureLines) addPhases(s summary.Summary, first *summary.Phase) {
	var notRun []string
	for _, p := range s.Phases {
		switch {
		case first != nil && p.Name == first.Name, gatesSayIt(s, p):
		case p.Status == summary.StatusFailed || p.Status == summary.StatusCanceled:
			l.add(CauseLine(p), fmt.Sprintf("**%s** %s: %s", Text(p.Name), Text(p.Status), Text(CauseLine(p))))
		case p.Status == summary.StatusNotRun:
			if why := strings.TrimSpace(p.Error); why != "" && !l.said[why] && first == nil {
				l.add(why, fmt.Sprintf("**%s** %s: %s", Text(p.Name), Text(p.Status), Text(Clip(why, 240))))
			} else {
				notRun = append(notRun, Text(p.Name))
			}
		}
	}
	if len(notRun) > 0 {
		l.lines = append(l.lines, "not run because of it: "+strings.Join(notRun, ", "))
	}
}

// addGateErrors lists the gates that erred, but for the one the verdict
// line quoted.
func (l *failureLines) addGateErrors(s summary.Summary, first *summary.Phase, reason string) {
	unmeasured := 0
	for _, g := range s.Gates {
		if g.Verdict != summary.VerdictError {
			continue
		}
		// Gates with nothing to judge after a failed phase are its
		// consequence: counted, not retold.
		if first != nil && strings.Contains(g.Message, "not measured") {
			unmeasured++
			continue
		}
		line := "**gate** error: " + Text(Clip(g.Message, 240))
		if !strings.Contains(reason, line) {
			l.add(g.Message, line)
		}
	}
	if unmeasured > 0 {
		l.lines = append(l.lines, plural(unmeasured, "gate")+" not judged: nothing was measured")
	}
}

// addUnchecked lists the checks that could not be made, but for those
// the verdict line of an unverified run said.
func (l *failureLines) addUnchecked(s summary.Summary, first *summary.Phase) {
	var uncheckedGates []summary.GateResult
	for _, g := range s.Gates {
		if g.Verdict == summary.VerdictNoBaseline || g.Verdict == summary.VerdictUnverified {
			uncheckedGates = append(uncheckedGates, g)
		}
	}
	// The verdict line of an unverified run said the shared cause once.
	grouped := s.Verdict == summary.VerdictUnverified && first == nil && uncheckedCause(uncheckedGates) != ""
	unchecked := 0
	for _, g := range uncheckedGates {
		unchecked++
		// The verdict line quoted the first check of an unverified run.
		if grouped || unchecked == 1 && s.Verdict == summary.VerdictUnverified && first == nil {
			continue
		}
		l.add(g.Message, "could not be checked (unverified: a warning, not a pass): "+Text(Clip(g.Message, 400)))
	}
}

// addProblems lists the run's problems, but for the first when the
// verdict line quoted it.
func (l *failureLines) addProblems(s summary.Summary, reason string) {
	for i, p := range s.Problems {
		if i == 0 && strings.Contains(reason, Text(Clip(p, 240))) {
			continue
		}
		l.add(p, Text(Clip(p, 400)))
	}
}

// writeUncheckedDetails lists, in the details, each check the verdict
// line grouped under their shared cause, in its own words.
func writeUncheckedDetails(b *strings.Builder, s summary.Summary) {
	var gates []summary.GateResult
	for _, g := range s.Gates {
		if g.Verdict == summary.VerdictNoBaseline || g.Verdict == summary.VerdictUnverified {
			gates = append(gates, g)
		}
	}
	if s.Verdict != summary.VerdictUnverified || failedPhase(s) != nil || uncheckedCause(gates) == "" {
		return
	}
	b.WriteString("Each check that could not be checked (unverified: a warning, not a pass):\n\n")
	for _, g := range gates {
		fmt.Fprintf(b, "- %s\n", Text(Clip(g.Message, 600)))
	}
	b.WriteString("\n")
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

// writeLinks are the places to click: the job's log, its artifacts, the
// trend page, the previous nights, and the vLLM commits between the last
// good and the first bad night.
func writeLinks(b *strings.Builder, s summary.Summary) {
	var links []string
	bk := s.Buildkite
	buildURL := ""
	if bk != nil && safeURL(bk.BuildURL) {
		buildURL = bk.BuildURL
	}
	if buildURL != "" && bk != nil && jobID(bk.JobID) {
		links = append(links, fmt.Sprintf("[job log](%s#%s)", buildURL, bk.JobID))
	}
	if safeName(s.Recipe) {
		links = append(links, fmt.Sprintf(`<a href="artifact://results/%s/summary.json">summary.json</a>`, s.Recipe))
		links = append(links, fmt.Sprintf(`<a href="artifact://%s#%s">trend page</a>`, TrendPage, s.Recipe))
	}
	if nights := nightsURL(buildURL, bk); nights != "" {
		links = append(links, fmt.Sprintf("[previous nights](%s)", nights))
	}
	for _, g := range s.Gates {
		cp := g.ChangePoint
		if cp == nil || g.Verdict != summary.VerdictFail {
			continue
		}
		good, bad := cp.LastGood.VLLMCommit, cp.FirstBad.VLLMCommit
		if hexCommit(good) && hexCommit(bad) && good != bad {
			links = append(links, fmt.Sprintf("[vLLM %s…%s](https://github.com/vllm-project/vllm/compare/%s...%s) (last good…first bad)", short(good), short(bad), good, bad))
			break
		}
	}
	if len(links) == 0 {
		return
	}
	b.WriteString(strings.Join(links, " · ") + "\n\n")
}

// TrendPage is the report step's page of every recipe's nights, an
// artifact of that step; a recipe's section is its name as the fragment.
const TrendPage = "results/_report/trends.html"

func short(c string) string {
	if len(c) > 9 {
		return c[:9]
	}
	return c
}

func hexCommit(c string) bool {
	if len(c) < 7 || len(c) > 40 {
		return false
	}
	for _, r := range c {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// nightsURL is the pipeline's builds page filtered to the branch whose
// scheduled builds are the nights a run is judged against, the same on a
// nightly as on a pull request's build (whose own branch holds none of
// them); all branches when that branch is unknown. "" without a build URL.
func nightsURL(buildURL string, bk *summary.BuildkiteInfo) string {
	pipeline := pipelineURL(buildURL)
	if pipeline == "" {
		return ""
	}
	if bk == nil || bk.BaselineBranch == "" {
		return pipeline + "/builds"
	}
	return pipeline + "/builds?branch=" + url.QueryEscape(bk.BaselineBranch)
}

// pipelineURL is a build URL without "/builds/N", or "".
func pipelineURL(buildURL string) string {
	i := strings.LastIndex(buildURL, "/builds/")
	if i <= 0 {
		return ""
	}
	return buildURL[:i]
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
