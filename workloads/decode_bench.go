package workloads

import (
	"fmt"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// Backends that `vllm bench serve --backend` accepts and that make sense
// against a vLLM server.
var benchBackends = []string{"openai", "openai-chat", "vllm"}

// RealTextDataset is a prompt set of real text that `vllm bench serve`
// reads from the Hugging Face hub (--dataset-name hf) and that keeps a
// fixed output length with --ignore-eos (--hf-output-len): speculative
// decoding's drafts are accepted on text like it, rarely on random tokens.
type RealTextDataset struct {
	// Path is the hub dataset vLLM's bench knows it by.
	Path string
	// Split is the split it reads.
	Split string
}

// RealTextDatasets are the real-text datasets a bench config may name.
var RealTextDatasets = map[string]RealTextDataset{
	// MT-Bench's first turns: what vLLM's own speculative decoding
	// benchmarks use.
	"mt-bench": {Path: "philschmid/mt-bench", Split: "train"},
	// Code edits: drafts of code are accepted more often than of prose.
	"instructcoder": {Path: "likaixin/InstructCoder", Split: "train"},
}

func realTextNames() []string {
	names := make([]string, 0, len(RealTextDatasets))
	for n := range RealTextDatasets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// DefaultBenchBackend is a config's backend when it names none: what
// `vllm bench serve --backend` defaults to.
const DefaultBenchBackend = "openai"

func (l *loader) decodeBench(n *yaml.Node) *Bench {
	d := l.d
	b := &Bench{}
	var sawConfigs bool
	d.Fields(n, "vllm_bench", []strictyaml.Field{
		{Name: "metadata", Decode: func(_, v *yaml.Node) {
			d.Fields(v, "vllm_bench.metadata", []strictyaml.Field{
				{Name: "device", Decode: func(_, v *yaml.Node) {
					b.Metadata.Device, _ = l.word(v, "vllm_bench.metadata.device", nameRE, "device", ": use letters, digits, '_', '.' and '-'")
				}},
				{Name: "tp", Decode: func(_, v *yaml.Node) { b.Metadata.TP, _ = d.Int(v, "vllm_bench.metadata.tp", 1, 64) }},
				{Name: "precision", Decode: func(_, v *yaml.Node) {
					b.Metadata.Precision, _ = l.word(v, "vllm_bench.metadata.precision", nameRE, "precision", ": use letters, digits, '_', '.' and '-'")
				}},
			})
		}},
		{Name: "regression", Decode: func(_, v *yaml.Node) { b.Regression = l.decodeRegression(v, "vllm_bench.regression") }},
		{Name: "configs", Decode: func(_, v *yaml.Node) {
			sawConfigs = true
			seen := map[string]int{}
			// Runs name result files, so a sweep point must not take the
			// name of another config's run (c-conc-8 beside a sweep of c).
			runs := map[string]int{}
			if v.Kind == yaml.SequenceNode {
				l.benchItems = len(v.Content)
			}
			d.Items(v, "vllm_bench.configs", func(i int, item *yaml.Node) {
				c := l.decodeBenchConfig(item, i)
				if c.Name == "" {
					return
				}
				if line, dup := seen[c.Name]; dup {
					d.Errorf(item, "bench config %q is listed twice (first at line %d)", c.Name, line)
					return
				}
				seen[c.Name] = item.Line
				names := []string{c.Name}
				if len(c.MaxConcurrency) > 0 {
					names = names[:0]
					for _, conc := range c.MaxConcurrency {
						names = append(names, runName(c, conc))
					}
				}
				for _, name := range names {
					if line, dup := runs[name]; dup {
						d.Errorf(item, "bench run %q is also a run of the config at line %d; rename one config", name, line)
						return
					}
				}
				for _, name := range names {
					runs[name] = item.Line
				}
				b.Configs = append(b.Configs, c)
			})
			if v.Kind == yaml.SequenceNode && len(v.Content) == 0 {
				d.Errorf(v, "vllm_bench.configs is empty; list at least one config")
			}
		}},
	})
	if !sawConfigs && n.Kind == yaml.MappingNode {
		d.Errorf(n, "vllm_bench needs configs")
	}
	return b
}

func (l *loader) intOrList(n *yaml.Node, what string) []int {
	d := l.d
	if n.Kind == yaml.SequenceNode {
		var out []int
		d.Items(n, what, func(_ int, item *yaml.Node) {
			if v, ok := d.Int(item, what+" entry", 1, 1_000_000); ok {
				out = append(out, v)
			}
		})
		if len(n.Content) == 0 {
			d.Errorf(n, "%s is an empty list", what)
		}
		return out
	}
	if v, ok := d.Int(n, what, 1, 1_000_000); ok {
		return []int{v}
	}
	return nil
}

func (l *loader) decodeBenchConfig(n *yaml.Node, i int) BenchConfig {
	d := l.d
	what := fmt.Sprintf("vllm_bench.configs[%d]", i)
	l.config = i
	defer func() { l.config = -1 }()
	// perf-eval leaves backend out to get vllm bench serve's default.
	c := BenchConfig{Repetitions: 1, Dataset: "random", Backend: DefaultBenchBackend}
	var promptsNode, concNode, inputNode *yaml.Node
	seen := map[string]bool{}
	field := func(name string, f func(k, v *yaml.Node)) strictyaml.Field {
		return strictyaml.Field{Name: name, Decode: func(k, v *yaml.Node) { seen[name] = true; f(k, v) }}
	}
	deprecated := func(name string) strictyaml.Field {
		return field(name, func(k, _ *yaml.Node) {
			d.Warnf(k, "%s is ignored: speed_bench is not used (it needs --skip-tokenizer-init, which caps every request at one output token); remove the field", name)
		})
	}
	d.Fields(n, what, []strictyaml.Field{
		field("name", func(_, v *yaml.Node) {
			c.Name, _ = l.word(v, what+".name", nameRE, "bench config name", ": use letters, digits, '_', '.' and '-'; it names result files")
		}),
		field("backend", func(_, v *yaml.Node) {
			if s, ok := l.decodeBenchBackend(v, what+".backend"); ok {
				c.Backend = s
			}
		}),
		field("dataset", func(_, v *yaml.Node) {
			if s, ok := l.decodeBenchDataset(v, what+".dataset"); ok {
				c.Dataset = s
			}
		}),
		field("input_len", func(_, v *yaml.Node) { inputNode = v; c.InputLen, _ = d.Int(v, what+".input_len", 1, 10_000_000) }),
		field("output_len", func(_, v *yaml.Node) { c.OutputLen, _ = d.Int(v, what+".output_len", 1, 10_000_000) }),
		field("num_prompts", func(_, v *yaml.Node) { promptsNode = v; c.NumPrompts = l.intOrList(v, what+".num_prompts") }),
		field("max_concurrency", func(_, v *yaml.Node) {
			concNode = v
			c.MaxConcurrency = l.intOrList(v, what+".max_concurrency")
		}),
		field("repetitions", func(_, v *yaml.Node) {
			if r, ok := l.decodeRepetitions(v, what+".repetitions"); ok {
				c.Repetitions = r
			}
		}),
		field("args", func(_, v *yaml.Node) { c.Args = l.decodeBenchArgs(v, what+".args") }),
		field("assertions", func(_, v *yaml.Node) { c.Assertions = l.decodeAssertions(v, what+".assertions") }),
		field("regression", func(_, v *yaml.Node) { c.Regression = l.decodeRegression(v, what+".regression") }),
		deprecated("speed_bench_dataset_subset"),
		deprecated("speed_bench_category"),
	})
	if n.Kind != yaml.MappingNode {
		return c
	}
	l.checkBenchConfigRequired(n, what, &c, seen, inputNode)
	if promptsNode != nil && concNode != nil {
		l.checkBenchSweep(&c, promptsNode, concNode)
	}
	return c
}

// decodeBenchBackend reads a config's backend; one vllm bench serve
// does not support against a vLLM server is reported but still kept.
func (l *loader) decodeBenchBackend(v *yaml.Node, what string) (string, bool) {
	d := l.d
	s, ok := d.String(v, what)
	if !ok {
		return "", false
	}
	if !slices.Contains(benchBackends, s) {
		d.Errorf(v, "backend %q is not one vllm bench serve supports against a vLLM server (%s)", s, strings.Join(benchBackends, ", "))
	}
	return s, true
}

// decodeBenchDataset reads a config's dataset: random or one of the
// real-text datasets; any other is reported but still kept.
func (l *loader) decodeBenchDataset(v *yaml.Node, what string) (string, bool) {
	d := l.d
	s, ok := d.String(v, what)
	if !ok {
		return "", false
	}
	_, text := RealTextDatasets[s]
	switch {
	case s == "random", text:
	case s == "speed_bench":
		d.Errorf(v, "dataset speed_bench is not supported: it needs --skip-tokenizer-init, which caps every request at one output token, so throughput reads ~0; use random, or real text (%s) for speculative decoding (the runner passes --ignore-eos)", strings.Join(realTextNames(), ", "))
	default:
		d.Errorf(v, "dataset %q is not supported; use random (fixed input/output lengths with --ignore-eos make nights comparable) or real text with a fixed output length (%s)", s, strings.Join(realTextNames(), ", "))
	}
	return s, true
}

// decodeRepetitions reads how many times a config runs; an even count is
// reported, since its median would be no real run, but still kept.
func (l *loader) decodeRepetitions(v *yaml.Node, what string) (int, bool) {
	r, ok := l.d.Int(v, what, 1, 99)
	if ok && r%2 == 0 {
		l.d.Errorf(v, "repetitions must be odd so the median is one real run, got %d", r)
	}
	return r, ok
}

// checkBenchConfigRequired reports the fields a config lacks. A real-text
// dataset's prompts have their own lengths, so it needs no input_len and
// may not set one.
func (l *loader) checkBenchConfigRequired(n *yaml.Node, what string, c *BenchConfig, seen map[string]bool, inputNode *yaml.Node) {
	d := l.d
	required := []string{"name", "input_len", "output_len", "num_prompts", "max_concurrency"}
	if _, text := RealTextDatasets[c.Dataset]; text {
		// Real prompts have their own lengths; the output stays fixed.
		required = slices.DeleteFunc(required, func(f string) bool { return f == "input_len" })
		if inputNode != nil {
			d.Errorf(inputNode, "%s.input_len: %s's prompts have their own lengths; remove input_len (output_len still fixes every answer's length)", what, c.Dataset)
		}
	}
	for _, req := range required {
		if !seen[req] {
			d.Errorf(n, "%s needs %s", what, req)
		}
	}
}

// checkBenchSweep reports a num_prompts list that does not pair up one to
// one with max_concurrency, and a concurrency listed twice: each sweep
// point names a run.
func (l *loader) checkBenchSweep(c *BenchConfig, promptsNode, concNode *yaml.Node) {
	d := l.d
	pl, cl := promptsNode.Kind == yaml.SequenceNode, concNode.Kind == yaml.SequenceNode
	switch {
	case pl && !cl:
		d.Errorf(promptsNode, "a num_prompts list needs a max_concurrency list of the same length")
	case pl && cl && len(c.NumPrompts) != len(c.MaxConcurrency):
		d.Errorf(promptsNode, "num_prompts has %d entries but max_concurrency has %d; they pair up one to one", len(c.NumPrompts), len(c.MaxConcurrency))
	}
	seenConc := map[int]bool{}
	for _, cc := range c.MaxConcurrency {
		if seenConc[cc] {
			d.Errorf(concNode, "max_concurrency %d is listed twice; each sweep point names a run", cc)
		}
		seenConc[cc] = true
	}
}
