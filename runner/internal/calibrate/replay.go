package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
)

// Targets of a replay of real histories (`--series FILE --check`).
const (
	TargetShuffledFalseAlarms = 0.01
	TargetStepPower           = 0.80
	TargetStaysRed            = 0.90
	// StepSigmas is the size of an injected step, in robust
	// night-to-night standard deviations of the nights before it.
	StepSigmas = 3
	// StepFrom is the earliest night a step is injected on, StepKept how
	// many nights it is kept (the series is cut there), StepMinNights
	// the fewest nights a series needs to get StepsPerSeries steps.
	StepFrom, StepKept, StepMinNights, StepsPerSeries = 40, 45, 100, 2
)

// ErrTargets marks a --check whose measured figures miss a target.
var ErrTargets = errors.New("targets missed")

// measureSeries is `runner calibrate --series`: replay every series of
// the file night by night (shuffled with --shuffle), one JSON object a
// night on stdout with --json, a summary table on stderr; with --check,
// the three figures of the real-history protocol instead.
func measureSeries(ctx context.Context, o Config, stdout, stderr io.Writer) error {
	all, err := ReadSeries(o.Series)
	if err != nil {
		return fmt.Errorf("%w: --series: %w", ErrUsage, err)
	}
	if o.Check {
		return check(ctx, o, all, stdout)
	}
	if o.Shuffle {
		for i := range all {
			all[i] = shuffled(all[i], o.Seed)
		}
	}
	results, err := replayAll(ctx, all, func(s Series) ([]NightResult, error) { return Replay(s, o.Nights, o.MinEffect) })
	if err != nil {
		return err
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		for _, rs := range results {
			for _, r := range rs {
				if err := enc.Encode(r); err != nil {
					return fmt.Errorf("write nights: %w", err)
				}
			}
		}
	}
	return writeSeriesSummary(stderr, o, all, results)
}

// replayAll runs f on every series, a few at a time, in the file's order.
func replayAll[T any](ctx context.Context, all []Series, f func(Series) (T, error)) ([]T, error) {
	out := make([]T, len(all))
	errs := make([]error, len(all))
	next := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i], errs[i] = f(all[i])
			}
		}()
	}
	for i := range all {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, errors.Join(errs...)
}

// setOf is the set a series belongs to: its name up to the first slash.
func setOf(name string) string {
	if i := strings.IndexByte(name, '/'); i > 0 {
		return name[:i]
	}
	return name
}

// seriesRNG is a random stream of its own for each series and purpose,
// so a series' figures do not depend on which others the file holds.
func seriesRNG(seed uint64, name string, purpose uint64) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed^h.Sum64(), purpose))
}

// shuffled is s with its nights (and their reruns) in random order and no
// known changes: the real noise, with every level shift taken out.
func shuffled(s Series, seed uint64) Series {
	rng := seriesRNG(seed, s.Name, 1)
	perm := rng.Perm(len(s.Values))
	out := Series{Name: s.Name, HigherIsBetter: s.HigherIsBetter, Values: make([]float64, len(perm))}
	if s.Reruns != nil {
		out.Reruns = make([][]float64, len(perm))
	}
	for i, j := range perm {
		out.Values[i] = s.Values[j]
		if s.Reruns != nil {
			out.Reruns[i] = s.Reruns[j]
		}
	}
	return out
}

// stepTrial is s cut StepKept nights after night k and made worse from k
// on by StepSigmas robust night-to-night standard deviations of the
// nights before k.
func stepTrial(s Series, k int) Series {
	logs := make([]float64, k)
	for i, v := range s.Values[:k] {
		logs[i] = math.Log(v)
	}
	f := math.Exp(StepSigmas * robustSDOf(logs))
	if s.HigherIsBetter {
		f = 1 / f
	}
	end := min(len(s.Values), k+StepKept)
	out := Series{Name: s.Name, HigherIsBetter: s.HigherIsBetter, Values: slices.Clone(s.Values[:end])}
	for _, c := range s.Known {
		if c < end {
			out.Known = append(out.Known, c)
		}
	}
	for i := k; i < end; i++ {
		out.Values[i] *= f
	}
	if s.Reruns != nil {
		out.Reruns = make([][]float64, end)
		for i := range end {
			out.Reruns[i] = slices.Clone(s.Reruns[i])
			if i >= k {
				for j := range out.Reruns[i] {
					out.Reruns[i][j] *= f
				}
			}
		}
	}
	return out
}

// robustSDOf is 1.4826·MAD(Δx)/√2: the night-to-night spread a level
// shift does not move.
func robustSDOf(x []float64) float64 {
	if len(x) < 2 {
		return 0
	}
	d := make([]float64, len(x)-1)
	for i := range d {
		d[i] = x[i+1] - x[i]
	}
	m := medianOf(d)
	for i := range d {
		d[i] = math.Abs(d[i] - m)
	}
	return 1.4826 * medianOf(d) / math.Sqrt2
}

func medianOf(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// stepNights picks the nights the steps of s start on: StepsPerSeries
// of them, at random in [StepFrom, len−StepKept], none with a known
// change from five nights before it to the end of its trial (a benchmark
// change makes a new level legitimately). Fewer when the series is
// shorter than StepMinNights or has no room.
func stepNights(s Series, seed uint64) []int {
	n := len(s.Values)
	if n < StepMinNights {
		return nil
	}
	var ok []int
	for k := StepFrom; k <= n-StepKept; k++ {
		if !slices.ContainsFunc(s.Known, func(c int) bool { return c >= k-5 && c < k+StepKept }) {
			ok = append(ok, k)
		}
	}
	rng := seriesRNG(seed, s.Name, 2)
	var out []int
	for len(out) < StepsPerSeries && len(ok) > 0 {
		i := rng.IntN(len(ok))
		out = append(out, ok[i])
		ok = slices.Delete(ok, i, i+1)
	}
	slices.Sort(out)
	return out
}

// checkResult is what --check measured on one set of series.
type checkResult struct {
	Set    string `json:"set"`
	Series int    `json:"series"`
	// ShuffledFlagged of ShuffledJudged nights of the shuffled copies
	// were flagged.
	ShuffledJudged  int     `json:"shuffled_judged"`
	ShuffledFlagged int     `json:"shuffled_flagged"`
	ShuffledRate    float64 `json:"shuffled_false_alarm_rate"`
	// Steps injected, Caught on their night or the next.
	Steps  int     `json:"steps"`
	Caught int     `json:"caught"`
	Power  float64 `json:"power"`
	// After a step's first flagged night, RedNights of LaterNights to
	// the end of its trial were flagged.
	LaterNights int     `json:"later_nights"`
	RedNights   int     `json:"red_nights"`
	StaysRed    float64 `json:"stays_red"`
	// Reruns a judged night, in the shuffled copies.
	RerunsPerNight float64 `json:"reruns_per_night"`
	Met            bool    `json:"met"`
	reruns         int
}

type seriesCheck struct {
	judged, flagged, reruns, steps, caught, later, red int
}

func checkOne(s Series, o Config) (seriesCheck, error) {
	var c seriesCheck
	rs, err := Replay(shuffled(s, o.Seed), o.Nights, o.MinEffect)
	if err != nil {
		return c, err
	}
	for _, r := range rs {
		if r.Judged {
			c.judged++
			c.reruns += r.Reruns
			if r.Flagged {
				c.flagged++
			}
		}
	}
	for _, k := range stepNights(s, o.Seed) {
		rs, err := Replay(stepTrial(s, k), o.Nights, o.MinEffect)
		if err != nil {
			return c, err
		}
		c.steps++
		if rs[k].Flagged || k+1 < len(rs) && rs[k+1].Flagged {
			c.caught++
		}
		first := slices.IndexFunc(rs[k:], func(r NightResult) bool { return r.Flagged })
		if first < 0 {
			continue
		}
		for _, r := range rs[k+first+1:] {
			c.later++
			if r.Flagged {
				c.red++
			}
		}
	}
	return c, nil
}

// check measures, per set of series and over all of them, the three
// figures real histories are held to: false alarms on each series
// shuffled once, the power against 3σ steps injected into them, and how
// many nights a caught step stays red.
func check(ctx context.Context, o Config, all []Series, stdout io.Writer) error {
	per, err := replayAll(ctx, all, func(s Series) (seriesCheck, error) { return checkOne(s, o) })
	if err != nil {
		return err
	}
	var sets []string
	by := map[string]*checkResult{}
	total := &checkResult{Set: "all"}
	for i, s := range all {
		name := setOf(s.Name)
		r := by[name]
		if r == nil {
			r = &checkResult{Set: name}
			by[name] = r
			sets = append(sets, name)
		}
		for _, r := range []*checkResult{r, total} {
			c := per[i]
			r.Series++
			r.ShuffledJudged += c.judged
			r.ShuffledFlagged += c.flagged
			r.reruns += c.reruns
			r.Steps += c.steps
			r.Caught += c.caught
			r.LaterNights += c.later
			r.RedNights += c.red
		}
	}
	rows := make([]*checkResult, 0, len(sets)+1)
	for _, name := range sets {
		rows = append(rows, by[name])
	}
	rows = append(rows, total)
	ratio := func(a, b int) float64 {
		if b == 0 {
			return math.NaN()
		}
		return float64(a) / float64(b)
	}
	for _, r := range rows {
		r.ShuffledRate = ratio(r.ShuffledFlagged, r.ShuffledJudged)
		r.Power = ratio(r.Caught, r.Steps)
		r.StaysRed = ratio(r.RedNights, r.LaterNights)
		r.RerunsPerNight = ratio(r.reruns, r.ShuffledJudged)
		r.Met = r.ShuffledRate <= TargetShuffledFalseAlarms && r.Power >= TargetStepPower && r.StaysRed >= TargetStaysRed
	}
	if o.JSON {
		enc := json.NewEncoder(stdout)
		for _, r := range rows {
			if err := enc.Encode(jsonSafe(*r)); err != nil {
				return fmt.Errorf("write results: %w", err)
			}
		}
	} else {
		fmt.Fprintf(stdout, "%s: %d series, %d past nights, floor %g%%, seed %d; each series shuffled once (known changes dropped); %d steps of %dσ per series of ≥ %d nights (σ = 1.4826·MAD(Δ log x)/√2 before the step, the step at night ≥ %d, cut %d nights after)\n",
			o.Series, len(all), o.Nights, o.MinEffect, o.Seed, StepsPerSeries, StepSigmas, StepMinNights, StepFrom, StepKept)
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "set\tseries\tshuffled nights flagged (≤ %g%%)\tsteps caught within two nights (≥ %g%%)\tred after the catch (≥ %g%%)\tre-runs/night\ttargets\n",
			TargetShuffledFalseAlarms*100, TargetStepPower*100, TargetStaysRed*100)
		for _, r := range rows {
			met := "met"
			if !r.Met {
				met = "missed"
			}
			fmt.Fprintf(tw, "%s\t%d\t%.2f%% (%d/%d)\t%.1f%% (%d/%d)\t%.1f%% (%d/%d)\t%.3f\t%s\n", r.Set, r.Series,
				r.ShuffledRate*100, r.ShuffledFlagged, r.ShuffledJudged, r.Power*100, r.Caught, r.Steps, r.StaysRed*100, r.RedNights, r.LaterNights, r.RerunsPerNight, met)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if !total.Met {
		return fmt.Errorf("%w: %s", ErrTargets, o.Series)
	}
	return nil
}

// jsonSafe replaces the NaNs of a set without steps with zeros, which
// JSON can hold; Steps and LaterNights say there were none.
func jsonSafe(r checkResult) checkResult {
	for _, p := range []*float64{&r.ShuffledRate, &r.Power, &r.StaysRed, &r.RerunsPerNight} {
		if math.IsNaN(*p) {
			*p = 0
		}
	}
	return r
}

// writeSeriesSummary is the table --series prints on stderr: per set of
// series, how many nights were judged and flagged, how many of the
// flagged nights were one-night episodes (neither neighbour flagged),
// unconfirmed spikes, re-runs, and the typical bound and noise.
func writeSeriesSummary(w io.Writer, o Config, all []Series, results [][]NightResult) error {
	type row struct {
		set                                             string
		series, judged, flagged, single, unconf, reruns int
		thresholds, noise                               []float64
	}
	var rows []*row
	by := map[string]*row{}
	total := &row{set: "all"}
	for i, rs := range results {
		name := setOf(all[i].Name)
		r := by[name]
		if r == nil {
			r = &row{set: name}
			by[name] = r
			rows = append(rows, r)
		}
		for _, r := range []*row{r, total} {
			r.series++
			for j, n := range rs {
				if !n.Judged {
					continue
				}
				r.judged++
				r.reruns += n.Reruns
				if n.Unconfirmed {
					r.unconf++
				}
				r.thresholds = append(r.thresholds, n.ThresholdPct)
				r.noise = append(r.noise, n.NoiseCVPct)
				if n.Flagged {
					r.flagged++
					if (j == 0 || !rs[j-1].Flagged) && (j+1 == len(rs) || !rs[j+1].Flagged) {
						r.single++
					}
				}
			}
		}
	}
	rows = append(rows, total)
	what := "as recorded"
	if o.Shuffle {
		what = fmt.Sprintf("each shuffled once, seed %d, known changes dropped", o.Seed)
	}
	fmt.Fprintf(w, "%s: %d series (%s), %d past nights, floor %g%%\n", o.Series, len(all), what, o.Nights, o.MinEffect)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "set\tseries\tjudged nights\tflagged\tone-night episodes\tunconfirmed\tre-runs/night\tmedian threshold\tmedian noise CV")
	pct := func(a, b int) float64 { return 100 * float64(a) / float64(max(1, b)) }
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.2f%%\t%.2f%%\t%.2f%%\t%.3f\t%.1f%%\t%.1f%%\n", r.set, r.series, r.judged,
			pct(r.flagged, r.judged), pct(r.single, r.judged), pct(r.unconf, r.judged), float64(r.reruns)/float64(max(1, r.judged)),
			medianOf(r.thresholds), medianOf(r.noise))
	}
	return tw.Flush()
}
