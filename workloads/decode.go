package workloads

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

var (
	// Names become result folders, container names and step keys.
	nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$`)
	// A Hugging Face hub id (org/name) or a plain path.
	modelRE = regexp.MustCompile(`^/?[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)
	// Task names and bfcl categories name result folders: "." and ".."
	// (or "-x", a flag to lm_eval) must not be one.
	taskRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	argKeyRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
	metricRE = regexp.MustCompile(`^[A-Za-z0-9_.,-]+$`)
	flagRE   = regexp.MustCompile(`^--[a-z0-9][a-z0-9-]*$`)
)

func (l *loader) decodeRecipe(root *yaml.Node) *Recipe {
	d := l.d
	r := &Recipe{Path: d.File}
	seen := map[string]*yaml.Node{}
	mark := func(k *yaml.Node) { seen[k.Value] = k }
	d.Fields(root, "the recipe", []strictyaml.Field{
		{Name: "name", Decode: func(k, v *yaml.Node) {
			mark(k)
			if s, ok := l.word(v, "name", nameRE, "name", ": use letters, digits, '_', '.' and '-' (at most 80, starting with a letter or digit); it names result folders and containers"); ok {
				r.Name = s
				l.nameNode = v
			}
		}},
		{Name: "gpu", Decode: func(k, v *yaml.Node) {
			mark(k)
			if s, ok := d.String(v, "gpu"); ok {
				if p, found := l.profiles.Lookup(s); found {
					r.GPU = p.GPU
				} else {
					d.Errorf(v, "unknown gpu %q; known: %s", s, strings.Join(l.profiles.Names(), ", "))
				}
			}
		}},
		{Name: "num_gpus", Decode: func(k, v *yaml.Node) {
			mark(k)
			r.NumGPUs, _ = d.Int(v, "num_gpus", 1, 8)
			l.numGPUsNode = v
		}},
		{Name: "nightly", Decode: func(_, v *yaml.Node) { r.Nightly, _ = d.Bool(v, "nightly") }},
		{Name: "timeout_in_minutes", Decode: func(_, v *yaml.Node) {
			r.TimeoutInMinutes, _ = d.Int(v, "timeout_in_minutes", 1, 24*60)
			l.nodes.timeout = v
		}},
		{Name: "bench_only", Decode: func(_, v *yaml.Node) { r.BenchOnly, _ = d.Bool(v, "bench_only") }},
		{Name: "blocked_by", Decode: func(_, v *yaml.Node) {
			d.Items(v, "blocked_by", func(_ int, item *yaml.Node) {
				if s, ok := d.String(item, "blocked_by entry"); ok {
					if strings.TrimSpace(s) == "" || strings.ContainsAny(s, "\n\x00") {
						d.Errorf(item, "blocked_by entries are one line of text, such as vllm-project/vllm#45381")
						return
					}
					r.BlockedBy = append(r.BlockedBy, s)
				}
			})
			if len(r.BlockedBy) == 0 && v.Kind == yaml.SequenceNode {
				d.Errorf(v, "blocked_by is empty; remove it when nothing blocks the recipe")
			}
		}},
		{Name: "vllm", Decode: func(k, v *yaml.Node) { mark(k); l.decodeVLLM(v, &r.VLLM) }},
		{Name: "lm_eval", Decode: func(k, v *yaml.Node) { mark(k); r.LMEval = l.decodeLMEval(v) }},
		{Name: "vllm_bench", Decode: func(k, v *yaml.Node) { mark(k); r.Bench = l.decodeBench(v) }},
		{Name: "bfcl", Decode: func(k, v *yaml.Node) { mark(k); l.bfclNode = k; r.BFCL = l.decodeBFCL(v) }},
		{Name: "aiperf", Decode: func(k, v *yaml.Node) { mark(k); r.AIPerf = l.decodeAIPerf(v) }},
	})
	if root.Kind != yaml.MappingNode {
		return r
	}
	for _, req := range []string{"name", "gpu", "num_gpus", "vllm"} {
		if seen[req] == nil {
			d.Errorf(root, "recipe needs %s", req)
		}
	}
	if seen["lm_eval"] == nil && seen["vllm_bench"] == nil && seen["bfcl"] == nil && seen["aiperf"] == nil {
		d.Errorf(root, "recipe measures nothing: add lm_eval, vllm_bench, bfcl or aiperf")
	}
	if r.BenchOnly && r.Bench == nil && seen["vllm_bench"] == nil {
		d.Errorf(root, "bench_only is set but the recipe has no vllm_bench")
	}
	l.checkToolCalling(r)
	l.checkMetricRefs(r)
	l.checkStartupFits(r)
	l.checkEngineReady(r)
	l.checkBuild(r)
	si := r.VLLM.Serve
	if r.NumGPUs > 0 && l.numGPUsNode != nil && si.TP*si.DP*si.PP > r.NumGPUs {
		d.Errorf(l.numGPUsNode, "serve args need %d GPUs (TP %d × DP %d × PP %d) but num_gpus is %d", si.TP*si.DP*si.PP, si.TP, si.DP, si.PP, r.NumGPUs)
	}
	return r
}

// word decodes a string that must match re; when it does not, the message
// is label, the quoted text, then rule. The value is kept only when it is such a
// string: an invalid one is reported once, and a caller's later checks (a
// name listed twice, a recipe it points to) see nothing.
func (l *loader) word(v *yaml.Node, what string, re *regexp.Regexp, label, rule string) (string, bool) {
	s, ok := l.d.String(v, what)
	if !ok {
		return "", false
	}
	if !re.MatchString(s) {
		l.d.Errorf(v, "%s %q%s", label, s, rule)
		return "", false
	}
	return s, true
}

// optFloat decodes an optional number within [min, max]; nil when absent
// or invalid (the problem is reported).
func (l *loader) optFloat(v *yaml.Node, what string, min, max float64) *float64 {
	f, ok := l.d.Float(v, what, min, max)
	if !ok {
		return nil
	}
	return &f
}

// yaml11Bool reports an unquoted scalar that YAML 1.1 reads as a boolean
// and YAML 1.2 as text (yes, No, ON, y, ...): a recipe author means the
// boolean, the loader would see the text.
func yaml11Bool(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 || n.ShortTag() != "!!str" {
		return false
	}
	switch strings.ToLower(n.Value) {
	case "y", "yes", "n", "no", "on", "off":
		return true
	}
	return false
}

func hasKey(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

// withoutKey returns a copy of mapping n without the pair at index i, so an
// already reported field is not reported twice.
func withoutKey(n *yaml.Node, i int) *yaml.Node {
	c := *n
	c.Content = append(append([]*yaml.Node(nil), n.Content[:i]...), n.Content[i+2:]...)
	return &c
}

func atoi(s string) (int, bool) {
	v, err := strconv.Atoi(s)
	return v, err == nil
}
