package workloads

import (
	"fmt"
	"strconv"
	"strings"
)

// AIPerfPoint is one run an aiperf config plans: the config itself, or
// one point of its sweep. Name is the folder aiperf writes the point's
// artifacts to (config/sweep/config.py's naming: key_value of each swept
// option, joined with "__"), "" for a config that does not sweep.
type AIPerfPoint struct {
	Name        string
	Concurrency int // 0 when the config leaves it to aiperf
	Requests    int
}

// Points are the runs the config plans, in aiperf's order: a comma list
// in --concurrency or --request-count sweeps, as a grid of both unless
// --sweep-type is zip. Every one of them must be measured for the run
// to be judged. An error says why the plan cannot be read; the recipe's
// lint reports the same flags.
func (c AIPerfConfig) Points() ([]AIPerfPoint, error) {
	var conc, reqs []int
	sweepType := ""
	for _, a := range c.Args {
		var err error
		switch a.Flag {
		case "--concurrency":
			conc, err = positiveList(a)
		case "--request-count", "--num-requests":
			reqs, err = positiveList(a)
		case "--sweep-type":
			if len(a.Values) == 1 {
				sweepType = a.Values[0]
			}
		}
		if err != nil {
			return nil, fmt.Errorf("aiperf config %s: %w", c.Name, err)
		}
	}
	sweepConc, sweepReqs := len(conc) > 1, len(reqs) > 1
	if !sweepConc && !sweepReqs {
		p := AIPerfPoint{}
		if len(conc) == 1 {
			p.Concurrency = conc[0]
		}
		if len(reqs) == 1 {
			p.Requests = reqs[0]
		}
		return []AIPerfPoint{p}, nil
	}
	if len(conc) == 0 {
		conc = []int{0}
	}
	if len(reqs) == 0 {
		reqs = []int{0}
	}
	var out []AIPerfPoint
	add := func(cn, rq int) {
		var parts []string
		if sweepConc {
			parts = append(parts, "concurrency_"+strconv.Itoa(cn))
		}
		if sweepReqs {
			parts = append(parts, "requests_"+strconv.Itoa(rq))
		}
		out = append(out, AIPerfPoint{Name: strings.Join(parts, "__"), Concurrency: cn, Requests: rq})
	}
	switch sweepType {
	case "zip":
		if sweepConc && sweepReqs && len(conc) != len(reqs) {
			return nil, fmt.Errorf("aiperf config %s: --sweep-type zip needs lists of the same length, got %d and %d", c.Name, len(conc), len(reqs))
		}
		for i := range max(len(conc), len(reqs)) {
			add(conc[min(i, len(conc)-1)], reqs[min(i, len(reqs)-1)])
		}
	case "", "grid":
		for _, cn := range conc {
			for _, rq := range reqs {
				add(cn, rq)
			}
		}
	default:
		return nil, fmt.Errorf("aiperf config %s: --sweep-type %q is neither grid nor zip", c.Name, sweepType)
	}
	return out, nil
}

// positiveList reads a flag's value as aiperf reads a sweepable one: a
// positive integer or a comma list of them.
func positiveList(a BenchArg) ([]int, error) {
	if len(a.Values) != 1 {
		return nil, fmt.Errorf("%s takes one value, got %d", a.Flag, len(a.Values))
	}
	var out []int
	for _, p := range strings.Split(a.Values[0], ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%s %q: each value must be a positive integer", a.Flag, a.Values[0])
		}
		out = append(out, n)
	}
	return out, nil
}
