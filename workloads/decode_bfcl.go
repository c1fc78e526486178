package workloads

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

func (l *loader) decodeBFCL(n *yaml.Node) *BFCL {
	d := l.d
	b := &BFCL{}
	var catsNode, casesNode, expectNode *yaml.Node
	var gateKeys []*yaml.Node
	d.Fields(n, "bfcl", []strictyaml.Field{
		{Name: "test_categories", Decode: func(_, v *yaml.Node) {
			catsNode = v
			b.TestCategories = l.decodeBFCLCategories(v)
		}},
		{Name: "num_threads", Decode: func(_, v *yaml.Node) { b.NumThreads, _ = d.Int(v, "bfcl.num_threads", 1, 1024) }},
		{Name: "timeout_minutes", Decode: func(_, v *yaml.Node) { b.TimeoutMinutes, _ = d.Int(v, "bfcl.timeout_minutes", 1, 24*60) }},
		{Name: "temperature", Decode: func(_, v *yaml.Node) {
			b.Temperature = l.optFloat(v, "bfcl.temperature", 0, 2)
		}},
		{Name: "maximum_step_limit", Decode: func(_, v *yaml.Node) { b.MaximumStepLimit, _ = d.Int(v, "bfcl.maximum_step_limit", 1, 10_000) }},
		{Name: "max_test_cases", Decode: func(_, v *yaml.Node) {
			casesNode = v
			b.MaxTestCases = map[string]int{}
			d.Pairs(v, "bfcl.max_test_cases", func(k, cv *yaml.Node) {
				if c, ok := d.Int(cv, "bfcl.max_test_cases."+k.Value, 1, 1_000_000); ok {
					b.MaxTestCases[k.Value] = c
				}
			})
		}},
		{Name: "expect", Decode: func(_, v *yaml.Node) {
			expectNode = v
			d.Pairs(v, "bfcl.expect", func(k, ev *yaml.Node) {
				for _, e := range l.decodeExpectations(ev, "bfcl.expect."+k.Value, expectKind{metric: BFCLMetric, max: 1}) {
					b.Gates = append(b.Gates, BFCLGate{Category: k.Value, Expect: e})
				}
				gateKeys = append(gateKeys, k)
			})
		}},
	})
	if n.Kind == yaml.MappingNode && catsNode == nil {
		d.Errorf(n, "bfcl needs test_categories")
	}
	if casesNode != nil && catsNode != nil {
		l.checkBFCLMaxTestCases(b, casesNode)
	}
	if expectNode != nil && catsNode != nil {
		l.checkBFCLGateTargets(b, gateKeys)
	}
	return b
}

// decodeBFCLCategories reads test_categories, keeping the known ones
// listed once that share no leaf with a category kept before them.
func (l *loader) decodeBFCLCategories(v *yaml.Node) []string {
	d := l.d
	var kept []string
	seen := map[string]int{}
	lines := map[string]int{} // of the categories kept
	d.Items(v, "bfcl.test_categories", func(_ int, item *yaml.Node) {
		s, ok := l.word(item, "bfcl.test_categories entry", taskRE, "bfcl test category", ": use letters, digits and '_'")
		if !ok {
			return
		}
		if line, dup := seen[s]; dup {
			d.Errorf(item, "bfcl test category %q is listed twice, at lines %d and %d; keep one", s, line, item.Line)
			return
		}
		seen[s] = item.Line
		if !l.checkBFCLCategory(item, s) {
			return
		}
		if other, shared := bfclOverlap(kept, s); other != "" {
			d.Errorf(item, "bfcl test categories %s (line %d) and %s (line %d) both run %s: a gate on a shared leaf would be judged by either run; keep the group or its leaves, not both", other, lines[other], s, item.Line, strings.Join(shared, ", "))
			return
		}
		lines[s] = item.Line
		kept = append(kept, s)
	})
	return kept
}

// checkBFCLCategory reports a category the runner cannot run or that
// bfcl-eval does not know, with the known ones it is close to.
func (l *loader) checkBFCLCategory(item *yaml.Node, s string) bool {
	d := l.d
	if why := bfclCategoryProblem(s); why != "" {
		d.Errorf(item, "%s", why)
		return false
	}
	if _, known := BFCLLeaves(s); !known {
		msg := fmt.Sprintf("unknown bfcl test category %q (bfcl-eval %s)", s, BFCLVersion)
		if close := strictyaml.Closest(s, bfclKnownCategories(), 3); len(close) > 0 {
			msg += "; did you mean " + strings.Join(close, ", ") + "?"
		}
		d.Errorf(item, "%s", msg)
		return false
	}
	return true
}

// checkBFCLMaxTestCases reports a subsampled category that is not listed,
// that has memory entries (which depend on entries before them), or whose
// count leaves a sub-category fewer entries than BFCL can evaluate.
func (l *loader) checkBFCLMaxTestCases(b *BFCL, casesNode *yaml.Node) {
	d := l.d
	for cat := range b.MaxTestCases {
		if !slices.Contains(b.TestCategories, cat) {
			line, col := d.Locate(casesNode, cat)
			d.ErrorAt(line, col, "bfcl.max_test_cases names %q, which is not in test_categories", cat)
			continue
		}
		leaves, _ := BFCLLeaves(cat)
		line, col := d.Locate(casesNode, cat)
		if memory := slices.IndexFunc(leaves, func(s string) bool { return strings.HasPrefix(s, "memory_") }); memory >= 0 {
			// The runner refuses it too (runner/internal/bfcl.Plans).
			d.ErrorAt(line, col, "bfcl.max_test_cases.%s: subsampling %s is not supported: its test entries depend on prerequisite entries", cat, leaves[memory])
			continue
		}
		if c, need := b.MaxTestCases[cat], BFCLMinEntriesPerLeaf*len(leaves); c < need {
			d.ErrorAt(line, col, "bfcl.max_test_cases.%s is %d, below %d: the run splits it over %d sub-categories (%s), and BFCL's evaluation fails on a sub-category of one entry (statistics.stdev of one latency); give each at least %d", cat, c, need, len(leaves), strings.Join(leaves, ", "), BFCLMinEntriesPerLeaf)
		}
	}
}

// checkBFCLGateTargets reports expect keys that no run has a result for.
func (l *loader) checkBFCLGateTargets(b *BFCL, gateKeys []*yaml.Node) {
	for _, k := range gateKeys {
		if !bfclGateTarget(b.TestCategories, k.Value) {
			l.d.Errorf(k, "bfcl.expect names %q, which is neither in test_categories nor a sub-category of a group there", k.Value)
		}
	}
}

// bfclOverlap finds the first listed category that runs a leaf category
// also runs, and the leaves they share.
func bfclOverlap(listed []string, category string) (other string, shared []string) {
	leaves, _ := BFCLLeaves(category)
	for _, c := range listed {
		cl, _ := BFCLLeaves(c)
		for _, leaf := range cl {
			if slices.Contains(leaves, leaf) {
				shared = append(shared, leaf)
			}
		}
		if len(shared) > 0 {
			return c, shared
		}
	}
	return "", nil
}

// bfclGateTarget reports whether a gate on category has a result: a listed
// category or a leaf of a listed group.
func bfclGateTarget(listed []string, category string) bool {
	for _, c := range listed {
		if c == category {
			return true
		}
		if BFCLIsGroup(c) {
			leaves, _ := BFCLLeaves(c)
			if slices.Contains(leaves, category) {
				return true
			}
		}
	}
	return false
}

// checkToolCalling refuses a bfcl block on a server that cannot answer
// it: vLLM answers a request with tools (tool_choice "auto", which BFCL's
// function-calling handler sends) with HTTP 400 unless it was started
// with --enable-auto-tool-choice and a --tool-call-parser, so every entry
// would fail.
func (l *loader) checkToolCalling(r *Recipe) {
	if r.BFCL == nil || l.bfclNode == nil || l.serveArgsUnread {
		return
	}
	var auto, parser bool
	for _, a := range r.VLLM.ServeArgs {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--enable-auto-tool-choice", "--enable_auto_tool_choice":
			auto = true
		case "--tool-call-parser", "--tool_call_parser":
			parser = true
		}
	}
	var missing []string
	if !auto {
		missing = append(missing, "--enable-auto-tool-choice")
	}
	if !parser {
		missing = append(missing, "--tool-call-parser <parser>")
	}
	if len(missing) > 0 {
		l.d.Errorf(l.bfclNode, "bfcl needs vllm.serve_args %s: without them vLLM refuses every request that offers tools (HTTP 400), so every BFCL entry would fail", strings.Join(missing, " and "))
	}
}
