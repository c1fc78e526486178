package detect

import (
	"fmt"
	"math"
	"slices"
)

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
