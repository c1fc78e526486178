package detect

import (
	"fmt"
	"github.com/benchkite/benchkite/internal/numfmt"
	"math"
	"slices"
)

const (
	// DefaultGrossMADs is how far from its neighbours, in robust
	// night-to-night standard deviations, a night is a gross outlier:
	// real histories have them on a few nights in a hundred (a slow
	// machine, a noisy neighbour), a re-run on the same machine repeats
	// them, and one of them in the spread would widen every bound for a
	// month.
	DefaultGrossMADs = 5
	// grossFrom is the fewest nights from which gross outliers are set
	// aside: with fewer the robust spread is too rough to tell.
	grossFrom = leaveOutFrom
	// grossNeighbours is how many nights on each side a night is
	// compared with: their median is robust to one or two more outliers
	// and follows a level shift within a few nights.
	grossNeighbours = 3
	// FixedNights is how many nights in a row an open regression carried
	// from night to night must pass before it counts as fixed: a single
	// good night of a regression that is still there is noise.
	FixedNights = 4
	// spikeMargin is how much further than a gross night tonight must be
	// to wait for confirmation: a step of three times the noise is that
	// far out on its first night one time in a thousand (5: one in 40).
	spikeMargin = 1
	// minCarryLevel is the fewest nights the level a regression is
	// judged against must come from for it to be carried: a level from
	// three nights of a fast pool is no reference to hold a month to.
	minCarryLevel = 10
	// goneP and fixedGoneP are the p-values of the nights since a
	// carried regression began, tonight with them, above which it is
	// gone: on any night, or on a night nearer the level before it.
	goneP, fixedGoneP = 0.5, 0.1
	// holdShare is the part of the false-alarm rate at which an open
	// regression's nights together hold it (Carried.Held), its level's
	// nights taken as one regime, as wide as they wander.
	holdShare = 0.2
	// heldP is the p-value of a held regression's nights together, tonight
	// with them, up to which tonight stays red: loose, since its nights
	// confirmed it already.
	heldP = 0.2
	// pendingNights and pendingP: an alarm its next nights have not
	// confirmed is over once pendingNights nights, its own included, have
	// passed and its nights together are no further off than pendingP.
	pendingNights, pendingP = 4, 0.05
)

// Carried is an open regression the night before handed on, so that a
// regression stays red until it is fixed or accepted however long that
// takes, not only while the nights before it are in the history.
type Carried struct {
	// Index is the first night of the regression, into the history
	// (negative when that night has left it; len(history) is tonight).
	Index int
	// Level is the log-scale level it is judged against: the baseline
	// on the night it was caught.
	Level float64
	// LevelNights is how many nights Level is the median of (0 when not
	// known): a level from a few nights is that much less sure, however
	// many nights have come since.
	LevelNights int
	// WorsePct is how much worse it was when caught, worse positive.
	WorsePct float64
	// Passed is how many nights in a row have looked fixed; it is closed
	// at FixedNights.
	Passed int
	// P is the smallest p-value its nights together have had against
	// Level, its level's nights taken as one regime: the evidence a
	// build's false-alarm budget weighs a held night by (0 before the
	// first).
	P float64
	// Held says it was confirmed: a second of its nights was flagged
	// while its nights together were as far below Level as chance alone
	// would seldom put them. Only a fix or an acceptance ends it then.
	Held bool
}

// robustSD is the robust night-to-night standard deviation of a log
// series, 1.4826·MAD(Δ)/√2 over the steps within the known regimes: level
// shifts touch one step each and do not move it.
func robustSD(hist []float64, known []int) float64 {
	var d []float64
	for i := 1; i < len(hist); i++ {
		if !slices.Contains(known, i) {
			d = append(d, hist[i]-hist[i-1])
		}
	}
	if len(d) == 0 {
		return 0
	}
	m := median(d)
	for i := range d {
		d[i] = math.Abs(d[i] - m)
	}
	return 1.4826 * median(d) / math.Sqrt2
}

// grossNights marks the nights of hist further than k robust standard
// deviations from the median of their neighbours within the same known
// regime (tonight, ton, counts as a neighbour of the last nights). The
// spread is local, that of the nights around each (localSD): eras whose
// noise differs severalfold share a history, and a quiet era's spread
// would set a noisy era's ordinary nights aside.
func grossNights(hist []float64, ton float64, known []int, k float64) []bool {
	n := len(hist)
	out := make([]bool, n)
	if k <= 0 {
		return out
	}
	all := append(slices.Clone(hist), ton)
	lo := segStarts(n, known)
	// The local spread, or the whole history's where that is wider: a
	// dozen nights' MAD can come out well short.
	global := robustSD(hist, known)
	nb := make([]float64, 0, 2*grossNeighbours)
	for i := range n {
		nb = nb[:0]
		for j := max(lo[i], i-grossNeighbours); j <= min(n, i+grossNeighbours); j++ {
			if j != i && lo[j] == lo[i] {
				nb = append(nb, all[j])
			}
		}
		sd := max(localSD(hist, lo, i), global)
		if len(nb) >= 2 && sd > 0 && math.Abs(hist[i]-median(nb)) > k*sd {
			out[i] = true
		}
	}
	return out
}

// segStarts is, for each night of n and tonight, the first night of its
// known regime.
func segStarts(n int, known []int) []int {
	lo := make([]int, n+1)
	for i := 1; i <= n; i++ {
		lo[i] = lo[i-1]
		if slices.Contains(known, i) {
			lo[i] = i
		}
	}
	return lo
}

// localWidth is how many nights on each side localSD looks at.
const localWidth = 8

// localSD is the robust night-to-night spread (robustSD) of the nights
// within localWidth of night i (i = len(hist) for tonight) in its known
// regime, or of the whole regime when that leaves too few.
func localSD(hist []float64, lo []int, i int) float64 {
	a, b := max(lo[i], i-localWidth), min(len(hist), i+localWidth+1)
	for b < len(hist) && lo[b] == lo[i] && b-a < 2*localWidth+1 {
		b++
	}
	for a > lo[i] && b-a < 2*localWidth+1 {
		a--
	}
	for b > a && lo[b-1] != lo[i] {
		b--
	}
	if b-a < grossFrom {
		return 0
	}
	return robustSD(hist[a:b], nil)
}

// kept maps a history with some nights set aside onto the nights kept.
type kept struct {
	orig []int // orig[j] is kept night j's index into the history
	n    int   // the history's length
}

// to is the kept index of history index i: the first kept night at or
// after it (len(kept) for tonight).
func (k kept) to(i int) int {
	j, _ := slices.BinarySearch(k.orig, i)
	return j
}

// from is the history index of kept index j (the history's length for
// tonight).
func (k kept) from(j int) int {
	switch {
	case j < 0:
		return j
	case j >= len(k.orig):
		return k.n + (j - len(k.orig))
	}
	return k.orig[j]
}

func (k kept) toAll(idx []int) []int {
	if idx == nil {
		return nil
	}
	out := []int{}
	for _, i := range idx {
		if j, ok := slices.BinarySearch(k.orig, i); ok {
			out = append(out, j)
		}
	}
	return out
}

// knownTo maps known change points: a change at a night set aside starts
// at the next night kept.
func (k kept) knownTo(idx []int) []int {
	var out []int
	for _, i := range idx {
		if j := k.to(i); j > 0 && j < len(k.orig) && !slices.Contains(out, j) {
			out = append(out, j)
		}
	}
	return out
}

// setAside judges tonight against the nights of history that are not
// gross outliers: the spread, the autocorrelation, the change-point
// search and the level all see the kept nights only, and every index of
// the decision is mapped back to the history.
func setAside(hist, reps []float64, fresh int, cfg Config) (Decision, error) {
	gross, sd := grossOf(hist, median(reps), cfg)
	if !slices.Contains(gross, true) {
		return judge(hist, reps, fresh, cfg, sd)
	}
	k, clean := keptOf(hist, gross)
	c := k.config(cfg, hist, gross)
	d, err := judge(clean, reps, fresh, c, sd)
	if err != nil {
		return d, err
	}
	d.Nights = len(hist)
	d.Outliers += len(hist) - len(clean)
	if d.Status == StatusInsufficientHistory {
		return d, nil
	}
	k.back(&d)
	if n := len(hist); d.Flagged && d.Rule != RuleOpen && gross[n-1] && c.prevBad {
		// Tonight confirms the spike of the night before: the
		// regression began that night.
		d.LastGood, d.FirstBad, d.Widened = n-2, n-1, false
		if d.Carry != nil {
			d.Carry.Index = n - 1
		}
	}
	return d, nil
}

// grossOf marks the gross outliers among the nights of hist, tonight
// (ton) counted as a neighbour, and returns the robust spread of the
// nights around tonight; nothing is marked and the spread is 0 when
// gross outliers are not set aside or the history is too short to tell.
func grossOf(hist []float64, ton float64, cfg Config) (gross []bool, sd float64) {
	if !(cfg.GrossMADs > 0 && len(hist) >= grossFrom) {
		return nil, 0
	}
	gross = grossNights(hist, ton, cfg.Known, cfg.GrossMADs)
	// A night the gate flagged is a regression's, not noise: its
	// evidence stays.
	for _, i := range cfg.Flagged {
		if i >= 0 && i < len(gross) {
			gross[i] = false
		}
	}
	return gross, localSD(hist, segStarts(len(hist), cfg.Known), len(hist))
}

// keptOf is the map from the nights of hist not marked gross onto the
// history, and those nights.
func keptOf(hist []float64, gross []bool) (kept, []float64) {
	k := kept{n: len(hist)}
	var clean []float64
	for i, g := range gross {
		if !g {
			k.orig = append(k.orig, i)
			clean = append(clean, hist[i])
		}
	}
	return k, clean
}

// config is cfg with its indexes into hist mapped onto the nights kept,
// the gross ones set aside.
func (k kept) config(cfg Config, hist []float64, gross []bool) Config {
	c := cfg
	c.Known = k.knownTo(cfg.Known)
	c.Flagged = k.toAll(cfg.Flagged)
	c.Unconfirmed = k.toAll(cfg.Unconfirmed)
	if cfg.Carried != nil {
		cc := *cfg.Carried
		if cc.Index >= 0 {
			cc.Index = k.to(cc.Index)
		}
		c.Carried = &cc
	}
	c.prevBad = prevWasBad(hist, gross, cfg) || cfg.prevBad
	return c
}

// prevWasBad says the night before tonight was flagged or an unconfirmed
// spike: it decides whether a spike tonight is confirmed, and still says
// so when it is set aside.
func prevWasBad(hist []float64, gross []bool, cfg Config) bool {
	n := len(hist)
	if cfg.Flagged == nil && gross[n-1] {
		// Without past verdicts, a gross night before tonight on the
		// worse side confirms tonight.
		return cfg.direction()*(median(hist[max(0, n-1-grossNeighbours):n-1])-hist[n-1]) > 0
	}
	return slices.Contains(cfg.Flagged, n-1) || slices.Contains(cfg.Unconfirmed, n-1)
}

// back maps the indexes of d, a decision on the nights kept, back onto
// the history.
func (k kept) back(d *Decision) {
	for i := range d.Changes {
		d.Changes[i].Index = k.from(d.Changes[i].Index)
	}
	d.RegimeStart = k.from(d.RegimeStart)
	if d.Open != nil {
		d.Open.Index = k.from(d.Open.Index)
	}
	if d.Carry != nil {
		d.Carry.Index = k.from(d.Carry.Index)
	}
	if d.Flagged {
		d.LastGood, d.FirstBad = k.from(d.LastGood), k.from(d.FirstBad)
	}
}

// spike says tonight is a gross outlier of the worse kind that nothing
// before it confirms: worse than the level and than the last nights by
// more than GrossMADs+spikeMargin robust standard deviations, and the night before
// was neither flagged nor itself such a spike. A re-run on the same
// machine repeats a slow machine's night, so it cannot tell one from a
// slow build; the next night can.
func spike(hist []float64, ton, worse, sd, dir float64, cfg Config) bool {
	n := len(hist)
	k := cfg.GrossMADs + spikeMargin
	if cfg.OneShot || cfg.GrossMADs <= 0 || sd <= 0 || n < grossFrom || worse <= k*sd {
		return false
	}
	if dir*(median(hist[n-grossNeighbours:])-ton) <= k*sd {
		return false // in line with the last nights: a level, not a spike
	}
	prev := n - 1
	return !cfg.prevBad && !slices.Contains(cfg.Flagged, prev) && !slices.Contains(cfg.Unconfirmed, prev)
}

// knownAfter says a known change (an acceptance, a recipe change) came
// on or after night i: a regression carried from before it is settled.
func knownAfter(known []int, i int) bool {
	return slices.ContainsFunc(known, func(k int) bool { return k >= i && k > 0 })
}

// carriedWhy describes a carried regression for people.
func carriedWhy(c Carried, nights int) string {
	if c.Index >= 0 {
		return fmt.Sprintf("the regression of %.1f%% that began %d nights ago", c.WorsePct, nights-c.Index)
	}
	return fmt.Sprintf("the regression of %.1f%% that began before the %d nights of the history", c.WorsePct, nights)
}

// carried judges tonight while a regression carried from the night before
// is open: against the level before it, c.Level, however long ago that
// was. Tonight stays red unless it is nearer that level than the nights
// since the regression began are, and, together with them, as far below
// it as chance alone would seldom put them. It is fixed once FixedNights
// nights in a row are nearer the level before it than the level since;
// a known change after it (an acceptance) has settled it already.
func carried(d Decision, hist []float64, ton float64, c Carried, nz noise, inflate, levelScale, dir float64, cfg Config) Decision {
	from := min(max(0, c.Index), len(hist))
	since := hist[from:]
	nz, inflate = sinceNoise(since, nz, inflate, cfg)
	if c.LevelNights > 0 {
		levelScale = max(levelScale, math.Sqrt(nz.sd*nz.sd*inflate*medianVar(c.LevelNights)))
	}
	bad := c.Level - dir*logWorse(c.WorsePct, dir)
	if len(since) > 0 {
		bad = median(since)
	}
	d.Open = nil
	d.Baseline = math.Exp(c.Level)
	d.DeltaPct = (math.Exp(ton-c.Level) - 1) * 100
	d.WorsePct = worsePct(dir*(c.Level-ton), dir)
	o := openNight{c: c, fixed: dir*(ton-(c.Level+bad)/2) > 0, nights: len(since) + 1}
	all := append(slices.Clone(since), ton)
	o.worse = worsePct(dir*(c.Level-median(all)), dir)
	spread := func(level float64, nz noise, inflate, levelScale float64) float64 {
		return tSurvival(dir*(level-median(all))/math.Sqrt(nz.sd*nz.sd*inflate*medianVar(len(all))+levelScale*levelScale), nz.nu)
	}
	o.p = spread(c.Level, nz, inflate, levelScale)
	// The nights before it, taken as one regime, however they wander,
	// judge how seldom its nights are this far off, from their own level
	// where that is nearer: a false alarm among wandering nights brings
	// its neighbours along, and the level it was caught against may be a
	// wander's.
	pre := hist[:from]
	level := c.Level
	if len(pre) >= minRhoNights && dir*(median(pre)-level) < 0 {
		level = median(pre)
	}
	bz, binfl, bls := beforeNoise(pre, nz, inflate, levelScale, cfg)
	pLevel := spread(level, bz, binfl, bls)
	if !(o.c.P > 0) || pLevel < o.c.P {
		o.c.P = pLevel
	}
	o.small = o.worse < cfg.MinEffectPct
	// One carried past the history has outlived any unconfirmed alarm:
	// its nights held it, as summaries written before Held did.
	o.c.Held = o.c.Held || c.Index < 0
	if !o.c.Held && !o.fixed && confirming(c, cfg.Flagged) {
		o.c.Held = pLevel <= cfg.FalseAlarmRate*holdShare
	}
	if o.fixed {
		o.c.Passed++
	} else {
		o.c.Passed = 0
	}
	d.PNight = o.p
	if o.fixed && !o.c.Held {
		d.PNight = 1
	}
	o.base = fmt.Sprintf("tonight %s is %.1f%% %s than %s, the level before %s (noise CV %.1f%% from %d nights%s)",
		numfmt.Sig(d.Tonight, 4), math.Abs(d.WorsePct), worseWord(d.WorsePct), numfmt.Sig(d.Baseline, 4), carriedWhy(c, len(hist)), cvOf(nz.sd)*100, nz.used, rhoNote(nz.rho))
	if o.c.Held {
		return o.held(d)
	}
	o.expired = len(hist)-c.Index >= pendingNights && o.p > pendingP
	return o.pending(d, cfg.FalseAlarmRate)
}

// openNight is tonight judged against a carried regression: c as
// tonight hands it on, whether tonight is fixed-looking (nearer the
// level before than the level since), and p, the p-value of its nights
// together, tonight with them, worse by worse percent.
type openNight struct {
	c                     Carried
	fixed, small, expired bool
	p, worse              float64
	nights                int
	base                  string
}

// held judges tonight for a confirmed regression: red while its nights
// together stay off the level before, until FixedNights nights in a row
// look fixed or its nights are no worse than chance allows. A re-run of
// tonight cannot overturn it, so it raises no alarm.
func (o openNight) held(d Decision) Decision {
	since := fmt.Sprintf("worse than it by %.1f%% over the %d nights since it began, tonight with them", o.worse, o.nights)
	switch {
	case o.p > goneP || o.small:
		d.Why = fmt.Sprintf("not flagged: %s; with the nights since it is no worse than chance allows: gone", o.base)
		return d
	case o.fixed && o.c.Passed >= FixedNights:
		d.Why = fmt.Sprintf("fixed: %s; %d nights in a row have been nearer the level before it than the level since", o.base, o.c.Passed)
		return d
	}
	d.Carry = &o.c
	if o.p > heldP {
		d.Why = fmt.Sprintf("not flagged: %s; %s, within chance tonight (p %s > %s), so it stays open", o.base, since, numfmt.P(o.p), numfmt.Exact(heldP))
		return d
	}
	// A build's budget weighs a held night by the evidence that held it,
	// not by tonight's nights alone.
	d.Flagged, d.Held, d.Status, d.Rule, d.PNight = true, true, StatusFlagged, RuleOpen, o.c.P
	d.LastGood, d.FirstBad = o.c.Index-1, o.c.Index
	if o.fixed {
		d.Why = fmt.Sprintf("still regressed: %s; tonight is nearer the level before it, but it is fixed only once %d nights in a row are (%d so far): %s", o.base, FixedNights, o.c.Passed, since)
	} else {
		d.Why = fmt.Sprintf("still regressed: %s; it is neither fixed nor accepted: %s", o.base, since)
	}
	return d
}

// pending judges tonight for a regression its nights have not yet held:
// it fails nothing (tonight is judged as any night is as well) and is
// over once gone, fixed, or not confirmed in time.
func (o openNight) pending(d Decision, alpha float64) Decision {
	switch {
	case o.p > goneP || o.fixed && o.p > fixedGoneP || o.small:
		d.Why = fmt.Sprintf("not flagged: %s; with the nights since it is no worse than chance allows: gone", o.base)
		return d
	case o.expired:
		d.Why = fmt.Sprintf("not flagged: %s; the nights after its alarm did not confirm it (p %s of its %d nights together): over", o.base, numfmt.P(o.p), o.nights)
		return d
	case o.fixed && o.c.Passed >= FixedNights:
		d.Why = fmt.Sprintf("fixed: %s; %d nights in a row have been nearer the level before it than the level since", o.base, o.c.Passed)
		return d
	}
	d.Carry = &o.c
	if o.fixed {
		d.Why = fmt.Sprintf("fixed tonight: %s, nearer the level before it than the level since; it is closed once %d nights in a row are (%d so far)", o.base, FixedNights, o.c.Passed)
		return d
	}
	d.Why = fmt.Sprintf("not flagged: %s; it stays open until its nights confirm it (p %s of its %d nights together; held at %s)", o.base, numfmt.P(o.p), o.nights, numfmt.Exact(alpha*holdShare))
	return d
}

// sinceNoise is the noise a carried regression's nights are judged
// with: the history's, or their own where that is wider or more
// autocorrelated. A wander the change-point search cut into regimes
// leaves the nights within them too quiet and too independent; the
// regression's own nights, taken as one, show the wander.
func sinceNoise(since []float64, nz noise, inflate float64, cfg Config) (noise, float64) {
	if len(since) < minRhoNights {
		return nz, inflate
	}
	own := noiseOf(since, nil, cfg)
	if own.df < 2 {
		return nz, inflate
	}
	out := nz
	out.sd = max(nz.sd, own.sd)
	out.rho = max(nz.rho, own.rho)
	out.nu = min(nz.nu, own.nu)
	return out, max(inflate, (1+out.rho)/(1-out.rho))
}

// confirming says one of a carried regression's nights was flagged (an
// unconfirmed first night is not): only then may its nights together
// hold it.
func confirming(c Carried, flagged []int) bool {
	return c.Index < 0 || slices.ContainsFunc(flagged, func(i int) bool { return i >= c.Index })
}

// logWorse is worsePct's inverse: the log-scale worsening of pct.
func logWorse(pct, dir float64) float64 {
	if dir > 0 {
		return -math.Log1p(-min(pct, 99.9) / 100)
	}
	return math.Log1p(pct / 100)
}

// Pools of machines: nights of one recipe land on machines whose speeds
// differ by a fixed amount (another VM type, another GPU bin), at random.
const (
	// poolGap and poolApart are how clear a split into two pools must be,
	// in robust standard deviations within the pools: the gap between
	// them and the distance between their medians.
	poolGap, poolApart = 4, 8
	// poolMostApart is the widest split read as two pools, on the log
	// scale (a factor of two): machines of one fleet differ by tens of
	// percent; nights an order of magnitude off ran another benchmark,
	// and are set aside as gross outliers instead.
	poolMostApart = math.Ln2
	// poolRuns is the fewest separate runs of nights the smaller pool
	// must come in: one or two runs are a level shift or a regression
	// that was fixed, not a pool.
	poolRuns = 3
	// poolFrom is the fewest nights two pools are told from: in fewer,
	// nights that wander make two clusters by chance.
	poolFrom = DefaultRejectFrom
)

// pool is a split of a history's newest known regime into two pools.
type pool struct {
	from      int     // the regime's first night
	ref, othr float64 // the pools' medians: ref the worse one
	mid       float64 // halfway between them
	other     []bool  // nights of the other pool, from from on
}

// poolsOf finds two pools in the nights of hist's newest known regime:
// a split of their values, with at least a tenth and three of them on
// each side, much wider than the spread within each side, whose smaller
// side comes in poolRuns or more separate runs. The reference pool is the
// larger one, the one a history without pools would hold: what the level
// of a regression carried on means does not change when the other pool
// misses a month.
func poolsOf(hist []float64, known []int, dir float64) *pool {
	from := 0
	for _, k := range known {
		if k > from && k < len(hist) {
			from = k
		}
	}
	seg := hist[from:]
	n := len(seg)
	if n < poolFrom {
		return nil
	}
	s := slices.Clone(seg)
	slices.Sort(s)
	m := max(3, n/10)
	best, at := 0.0, -1
	for j := m; j <= n-m; j++ {
		if g := s[j] - s[j-1]; g > best {
			best, at = g, j
		}
	}
	if at < 0 {
		return nil
	}
	lo, hi := median(s[:at]), median(s[at:])
	dev := make([]float64, 0, n)
	for _, v := range s[:at] {
		dev = append(dev, math.Abs(v-lo))
	}
	for _, v := range s[at:] {
		dev = append(dev, math.Abs(v-hi))
	}
	sw := 1.4826 * median(dev)
	if !(sw > 0) || best < poolGap*sw || hi-lo < poolApart*sw || hi-lo > poolMostApart {
		return nil
	}
	cut := (s[at-1] + s[at]) / 2
	small := at < n-at // the smaller side is the lower one
	runs := 0
	for i, v := range seg {
		if (v < cut) == small && (i == 0 || (seg[i-1] < cut) != small) {
			runs++
		}
	}
	if runs < poolRuns {
		return nil
	}
	p := &pool{from: from, ref: hi, othr: lo, mid: (lo + hi) / 2, other: make([]bool, n)}
	if !small {
		p.ref, p.othr = lo, hi // the larger pool is the reference
	}
	for i, v := range seg {
		p.other[i] = math.Abs(v-p.othr) < math.Abs(v-p.ref)
	}
	return p
}

// onPools judges tonight with the nights of each pool at their own level:
// every night of the pool tonight did not run on is moved onto tonight's
// pool by the distance between them, and the regression carried on, which
// is kept on the reference pool's scale, with them.
func onPools(hist, reps []float64, fresh int, cfg Config) (Decision, error) {
	dir := -1.0
	if cfg.HigherIsBetter {
		dir = 1
	}
	p := poolsOf(hist, cfg.Known, dir)
	if p == nil {
		return setAside(hist, reps, fresh, cfg)
	}
	ton := median(reps)
	onOther := math.Abs(ton-p.othr) < math.Abs(ton-p.ref)
	shift := p.othr - p.ref // from the reference pool to the other
	adj := slices.Clone(hist)
	for i := range p.other {
		switch {
		case p.other[i] && !onOther:
			adj[p.from+i] -= shift
		case !p.other[i] && onOther:
			adj[p.from+i] += shift
		}
	}
	c := cfg
	if cfg.Carried != nil && onOther {
		cc := *cfg.Carried
		cc.Level += shift
		c.Carried = &cc
	}
	d, err := setAside(adj, reps, fresh, c)
	if err != nil {
		return d, err
	}
	if d.Carry != nil && onOther {
		d.Carry.Level -= shift
	}
	if onOther && (d.Flagged && d.Rule != RuleOpen || d.Unconfirmed) {
		// The other pool's level comes from a few nights, and a night
		// between the pools may belong to either: it fails only if it
		// is also worse than the reference pool's level as it is. A
		// regression already open rests on many nights, and stays red.
		ref := slices.Clone(hist)
		for i := range p.other {
			if p.other[i] {
				ref[p.from+i] -= shift
			}
		}
		rd, err := setAside(ref, reps, fresh, cfg)
		if err != nil {
			return rd, err
		}
		if !rd.Flagged && !rd.Unconfirmed {
			d = rd
		}
	}
	which := "the reference pool"
	if onOther {
		which = "the other pool"
	}
	n := 0
	for _, o := range p.other {
		if o {
			n++
		}
	}
	d.Why += fmt.Sprintf("; the nights ran on two pools of machines %.0f%% apart (%d of %d on the %s one), each judged at its own level: tonight ran on %s",
		math.Abs(math.Expm1(shift))*100, n, len(p.other), betterWord(dir*shift), which)
	return d, nil
}

func betterWord(w float64) string {
	if w > 0 {
		return "better"
	}
	return "worse"
}

const (
	// eraNights is the fewest nights (before tonight's eve) of the newest
	// regime from which its own noise is used when it differs from the
	// older regimes' by more than eraRatio either way: a fleet or image
	// change that makes nights several times quieter or noisier would
	// otherwise be judged by the old noise for a month.
	eraNights = 10
	eraRatio  = 2
)

// eraNoise is nz, or the noise of the newest regime alone when it has
// eraNights nights and is more than eraRatio times quieter or noisier
// than the nights before it.
func eraNoise(hist []float64, cs []Change, cfg Config, nz noise) noise {
	n := len(hist) - 1 // the night before tonight is left out (noiseBefore)
	if len(hist) < DefaultRejectFrom || len(cs) == 0 {
		return nz
	}
	last := cs[len(cs)-1].Index
	if n-last < eraNights {
		return nz
	}
	newer := noiseOf(hist[last:n], nil, cfg)
	older := noiseOf(hist[:last], cs[:len(cs)-1], cfg)
	if newer.df < 2 || older.df < 2 || !(older.sd > 0) {
		return nz
	}
	if r := newer.sd / older.sd; r < 1/float64(eraRatio) || r > eraRatio {
		newer.outliers += nz.outliers
		return newer
	}
	return nz
}

// beforeNoise is the noise of the nights before a carried regression,
// taken as one regime, where that is wider than the history's: its
// level is their median, so it wanders as they do, however the
// change-point search cut them.
func beforeNoise(pre []float64, nz noise, inflate, levelScale float64, cfg Config) (noise, float64, float64) {
	if len(pre) < minRhoNights || slices.ContainsFunc(cfg.Known, func(i int) bool { return i > 0 && i < len(pre) }) {
		return nz, inflate, levelScale
	}
	own := noiseOf(pre, nil, cfg)
	if own.df < 2 {
		return nz, inflate, levelScale
	}
	out := nz
	out.sd = max(nz.sd, own.sd)
	out.rho = max(nz.rho, own.rho)
	out.nu = min(nz.nu, own.nu)
	infl := max(inflate, (1+out.rho)/(1-out.rho))
	return out, infl, max(levelScale, math.Sqrt(out.sd*out.sd*medianVar(len(pre))*infl))
}
