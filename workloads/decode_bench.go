package workloads

import (
	"fmt"
	"math"
	"slices"
	"strconv"
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

// Flags the runner sets itself, so a recipe cannot: the bench would measure
// something other than what the recipe says, or write results elsewhere.
var runnerOwnedBenchFlags = map[string]string{
	"--model":               "the runner passes the recipe's model",
	"--served-model-name":   "the runner passes the recipe's model",
	"--endpoint":            "the runner picks the endpoint from the backend",
	"--base-url":            "the runner points the bench at its server",
	"--host":                "the runner points the bench at its server",
	"--port":                "the runner points the bench at its server",
	"--backend":             "set backend on the config",
	"--endpoint-type":       "set backend on the config",
	"--dataset-name":        "set dataset on the config",
	"--dataset":             "set dataset on the config",
	"--dataset-path":        "set dataset on the config",
	"--num-prompts":         "set num_prompts on the config",
	"--random-input-len":    "set input_len on the config",
	"--random-output-len":   "set output_len on the config",
	"--hf-output-len":       "set output_len on the config",
	"--hf-split":            "set dataset on the config; the runner picks the split",
	"--hf-subset":           "set dataset on the config",
	"--hf-name":             "set dataset on the config",
	"--no-stream":           "the runner reads real-text datasets from the model cache (--no-stream) always",
	"--max-concurrency":     "set max_concurrency on the config",
	"--ignore-eos":          "the runner always passes --ignore-eos",
	"--result-filename":     "the runner names result files",
	"--result-dir":          "the runner names result files",
	"--save-result":         "the runner saves results",
	"--save-detailed":       "the runner saves results",
	"--append-result":       "the runner saves results",
	"--trust-remote-code":   "the runner passes it when the serve args trust remote code",
	"--skip-tokenizer-init": "it caps every request at one output token, so throughput reads ~0",
	"--tokenizer":           "the runner uses the model's tokenizer",
	"--tokenizer-mode":      "the runner passes the server's --tokenizer-mode, so both tokenize alike",
	"--config":              "vLLM's parser reads more flags from the file, which could set the runner's own; list them in args",
}

// Names `vllm bench serve --percentile-metrics` knows; others are ignored
// silently by vLLM, so here they are typos.
var percentileMetrics = []string{"ttft", "tpot", "itl", "e2el", "client_queue_time", "e2el_including_client_queue"}

// What the runner reads from a bench result (runner/internal/results):
// mean, median, std and p99 of ttft, tpot and itl.
var (
	requiredPercentileMetrics = []string{"ttft", "tpot", "itl"}
	requiredPercentile        = 99.0
)

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
	if !contains(benchBackends, s) {
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

// decodeBenchArgs reads a bench config's args: each key a
// `vllm bench serve` flag.
func (l *loader) decodeBenchArgs(n *yaml.Node, what string) []BenchArg {
	d := l.d
	return l.decodeFlagArgs(n, what, flagArgs{
		normalize: func(key string) string { return strings.TrimLeft(key, "-") },
		owned:     runnerOwnedBenchFlags,
		// vLLM's argparse reads a unique prefix of a flag as the flag.
		abbreviations: true,
		value: func(v *yaml.Node, what, _ string) bool {
			if yaml11Bool(v) {
				d.Errorf(v, "%s: %s is a YAML 1.1 boolean, which this loader (YAML 1.2) reads as the text %q and vllm bench serve would get as a value; write true to pass the flag, false to leave it out, or quote it to mean the text", what, v.Value, v.Value)
				return false
			}
			return true
		},
		arg: func(v *yaml.Node, what string, arg BenchArg) bool { return checkBenchArg(d, v, what, arg) },
	})
}

// flagArgs is how one tool reads a recipe's args map.
type flagArgs struct {
	// normalize strips the leading dashes the tool's keys may carry.
	normalize func(key string) string
	// owned are the runner's flags, with why; a recipe may not set them.
	owned map[string]string
	// abbreviations refuses unique prefixes of owned flags too.
	abbreviations bool
	// value checks one scalar value; it reports and returns false when bad.
	value func(v *yaml.Node, what, s string) bool
	// arg checks a whole decoded flag; nil accepts it.
	arg func(v *yaml.Node, what string, arg BenchArg) bool
}

// decodeFlagArgs reads an args map into flags: each key becomes --key
// (underscores as dashes), true a bare flag, false nothing, a list the
// flag repeated, anything else one value on one line. Keys the runner
// owns and keys that name the same flag twice are errors.
func (l *loader) decodeFlagArgs(n *yaml.Node, what string, f flagArgs) []BenchArg {
	d := l.d
	var out []BenchArg
	seen := map[string]*yaml.Node{}
	d.Pairs(n, what, func(k, v *yaml.Node) {
		flag := "--" + strings.ReplaceAll(f.normalize(k.Value), "_", "-")
		if !flagRE.MatchString(flag) {
			d.Errorf(k, "%s key %q is not a flag name", what, k.Value)
			return
		}
		if why, owned := f.owned[flag]; owned {
			d.Errorf(k, "%s: %s cannot be set here: %s", what, flag, why)
			return
		}
		if f.abbreviations {
			if full := abbreviates(flag, f.owned); len(full) > 0 {
				d.Errorf(k, "%s: %s abbreviates %s, which the runner sets: vLLM's argparse accepts a unique prefix of a flag as the flag; write flags in full", what, flag, strings.Join(full, " or "))
				return
			}
		}
		if prev, dup := seen[flag]; dup {
			d.Errorf(k, "%s: %q is %s again (first at line %d)", what, k.Value, flag, prev.Line)
			return
		}
		seen[flag] = k
		key := what + "." + k.Value
		arg := BenchArg{Flag: flag}
		scalar := func(v *yaml.Node) (string, bool) {
			s, ok := d.Scalar(v, key)
			if ok && strings.ContainsAny(s, "\n\x00") {
				d.Errorf(v, "%s: values are one line", key)
				return "", false
			}
			if ok && f.value != nil && !f.value(v, key, s) {
				return "", false
			}
			return s, ok
		}
		switch {
		case v.Kind == yaml.SequenceNode:
			d.Items(v, key, func(_ int, item *yaml.Node) {
				if s, ok := scalar(item); ok {
					arg.Values = append(arg.Values, s)
				}
			})
			if len(arg.Values) == 0 {
				return
			}
		case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool":
			// YAML 1.2 spells booleans true, True or TRUE (and false alike),
			// as the recipe's own fields read them; false means "do not pass
			// the flag", so keep it out of argv.
			if on, _ := d.Bool(v, key); !on {
				return
			}
		default:
			s, ok := scalar(v)
			if !ok {
				return
			}
			arg.Values = []string{s}
		}
		if f.arg == nil || f.arg(v, key, arg) {
			out = append(out, arg)
		}
	})
	return out
}

// checkBenchArg rejects values vLLM's bench reads differently from what
// the recipe seems to say, or that remove result keys the runner reads.
func checkBenchArg(d *strictyaml.Decoder, v *yaml.Node, what string, arg BenchArg) bool {
	single := func() (string, bool) {
		if len(arg.Values) != 1 || v.Kind != yaml.ScalarNode {
			d.Errorf(v, "%s takes one value (%s), got %s", what, arg.Flag, strictyaml.Describe(v))
			return "", false
		}
		return arg.Values[0], true
	}
	switch arg.Flag {
	case "--percentile-metrics":
		val, ok := single()
		if !ok {
			return false
		}
		// vLLM splits on "," and nothing else: " tpot" is an unknown name.
		names := strings.Split(val, ",")
		for _, name := range names {
			if !contains(percentileMetrics, name) {
				d.Errorf(v, "%s: %q is not a metric vllm bench serve reports (%s); it would be ignored silently", what, name, strings.Join(percentileMetrics, ", "))
				return false
			}
		}
		var missing []string
		for _, req := range requiredPercentileMetrics {
			if !contains(names, req) {
				missing = append(missing, req)
			}
		}
		if len(missing) > 0 {
			d.Errorf(v, "%s leaves out %s: the runner reads their statistics from every result; list %s and add others", what, strings.Join(missing, ", "), strings.Join(requiredPercentileMetrics, ","))
			return false
		}
	case "--metric-percentiles":
		val, ok := single()
		if !ok {
			return false
		}
		has := false
		for _, p := range strings.Split(val, ",") {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil || f < 0 || f > 100 {
				d.Errorf(v, "%s: %q is not a percentile between 0 and 100", what, p)
				return false
			}
			has = has || f == requiredPercentile
		}
		if !has {
			d.Errorf(v, "%s leaves out 99: the runner reads the p99 keys of every result; add 99", what)
			return false
		}
	case "--temperature":
		val, ok := single()
		if !ok {
			return false
		}
		if f, err := strconv.ParseFloat(val, 64); err != nil || f < 0 || math.IsInf(f, 0) || f != f {
			d.Errorf(v, "%s must be a number of at least 0, got %q", what, val)
			return false
		}
	}
	return true
}

func (l *loader) decodeAssertions(n *yaml.Node, what string) []Assertion {
	d := l.d
	var out []Assertion
	d.Pairs(n, what, func(k, v *yaml.Node) {
		if !metricRE.MatchString(k.Value) {
			d.Errorf(k, "%s: %q is not a result key", what, k.Value)
			return
		}
		l.metricRefs = append(l.metricRefs, metricRef{node: k, what: what, metric: k.Value, config: l.config})
		a := Assertion{Metric: k.Value}
		d.Fields(v, what+"."+k.Value, []strictyaml.Field{
			{Name: "min", Decode: func(_, v *yaml.Node) {
				a.Min = l.optFloat(v, what+"."+k.Value+".min", -math.MaxFloat64, math.MaxFloat64)
			}},
			{Name: "max", Decode: func(_, v *yaml.Node) {
				a.Max = l.optFloat(v, what+"."+k.Value+".max", -math.MaxFloat64, math.MaxFloat64)
			}},
		})
		if a.Min == nil && a.Max == nil {
			d.Errorf(v, "%s.%s needs min or max", what, k.Value)
			return
		}
		if a.Min != nil && a.Max != nil && *a.Min > *a.Max {
			d.Errorf(v, "%s.%s: min %g is above max %g", what, k.Value, *a.Min, *a.Max)
		}
		out = append(out, a)
	})
	return out
}

// DefaultRegressionNights is how many comparable past nights the
// regression detector looks at: `runner calibrate` measured its targets (at
// most 1 % false alarms per night, 90 % power for a step of three times the
// noise) with 30.
const DefaultRegressionNights = 30

// MinRegressionNights is the fewest nights a regression gate judges by when
// max_missing is not given: a young recipe is judged from its fifth night,
// with less power (see the README), rather than unverified for weeks.
const MinRegressionNights = 5

// minDetectorNights is the fewest nights the detector can estimate the
// noise from.
const minDetectorNights = 3

func (l *loader) decodeRegression(n *yaml.Node, what string) *Regression {
	d := l.d
	r := &Regression{Nights: DefaultRegressionNights, MaxMissing: -1}
	var acceptNodes map[string]*yaml.Node
	d.Fields(n, what, []strictyaml.Field{
		{Name: "nights", Decode: func(_, v *yaml.Node) { r.Nights, _ = d.Int(v, what+".nights", minDetectorNights, 50) }},
		{Name: "max_missing", Decode: func(_, v *yaml.Node) { r.MaxMissing, _ = d.Int(v, what+".max_missing", 0, 50) }},
		{Name: "accept", Decode: func(_, v *yaml.Node) { r.Accept, acceptNodes = l.decodeAccept(v, what+".accept") }},
		{Name: "rerun_on_alarm", Decode: func(_, v *yaml.Node) {
			if b, ok := d.Bool(v, what+".rerun_on_alarm"); ok {
				r.NoRerun = !b
			}
		}},
		{Name: "metrics", Decode: func(_, v *yaml.Node) {
			d.Pairs(v, what+".metrics", func(k, mv *yaml.Node) {
				m := RegressionMetric{Metric: k.Value}
				mwhat := what + ".metrics." + k.Value
				if !metricRE.MatchString(k.Value) {
					d.Errorf(k, "%s: %q is not a result key", what, k.Value)
					return
				}
				l.metricRefs = append(l.metricRefs, metricRef{node: k, what: what + ".metrics", metric: k.Value, config: l.config})
				var dirSet, dropSet bool
				d.Fields(mv, mwhat, []strictyaml.Field{
					{Name: "direction", Decode: func(_, v *yaml.Node) {
						if s, ok := d.String(v, mwhat+".direction"); ok {
							switch s {
							case "higher":
								m.HigherIsBetter, dirSet = true, true
							case "lower":
								m.HigherIsBetter, dirSet = false, true
							default:
								d.Errorf(v, "%s.direction must be higher or lower (which way is better), got %q", mwhat, s)
							}
						}
					}},
					{Name: "max_drop_pct", Decode: func(_, v *yaml.Node) { m.MaxDropPct, dropSet = d.Float(v, mwhat+".max_drop_pct", 0, 100) }},
				})
				if mv.Kind != yaml.MappingNode {
					return
				}
				if !dirSet {
					if hib, known := defaultDirection(k.Value); known {
						m.HigherIsBetter = hib
					} else {
						d.Errorf(mv, "%s needs direction (higher or lower is better)", mwhat)
					}
				}
				if !dropSet {
					d.Errorf(mv, "%s needs max_drop_pct", mwhat)
				}
				r.Metrics = append(r.Metrics, m)
			})
		}},
	})
	l.checkAccept(r, what, acceptNodes)
	if r.MaxMissing < 0 {
		r.MaxMissing = max(0, r.Nights-MinRegressionNights)
	}
	if r.Nights-r.MaxMissing < minDetectorNights && n.Kind == yaml.MappingNode {
		d.Errorf(n, "%s.max_missing (%d) must leave at least %d of the %d nights: the detector estimates the noise from them", what, r.MaxMissing, minDetectorNights, r.Nights)
	}
	return r
}

// checkMetricRefs reports assertion and regression keys that no result of
// their config holds: a gate on such a key could only be skipped.
func (l *loader) checkMetricRefs(r *Recipe) {
	if r.Bench == nil {
		return
	}
	spec := r.VLLM.Serve.Speculative != nil
	for _, ref := range l.metricRefs {
		configs := r.Bench.Configs
		if ref.config >= 0 {
			// Configs index as in the file only when none was dropped;
			// a dropped one is reported already.
			if len(configs) != l.benchItems || ref.config >= len(configs) {
				continue
			}
			configs = configs[ref.config : ref.config+1]
		}
		for _, c := range configs {
			keys := BenchResultKeys(&c, spec)
			if slices.Contains(keys, ref.metric) {
				continue
			}
			msg := fmt.Sprintf("%s: vllm bench serve writes no %q for config %s", ref.what, ref.metric, c.Name)
			if slices.Contains(benchSpecKeys, ref.metric) {
				msg += " (it is written only when serve_args configure speculative decoding)"
			} else if ref.metric == benchGoodputKey {
				msg += " (it is written only with --goodput)"
			} else if close := strictyaml.Closest(ref.metric, keys, 3); len(close) > 0 {
				msg += "; did you mean " + strings.Join(close, ", ") + "?"
			} else {
				msg += " (latency keys follow its --percentile-metrics and --metric-percentiles)"
			}
			l.d.Errorf(ref.node, "%s", msg)
			break
		}
	}
}

// defaultDirection knows which way is better for the usual bench keys.
func defaultDirection(metric string) (higherIsBetter, known bool) {
	switch {
	case strings.HasSuffix(metric, "_ms"):
		return false, true
	case strings.Contains(metric, "throughput"), strings.HasPrefix(metric, "spec_decode_acceptance"):
		return true, true
	}
	return false, false
}
