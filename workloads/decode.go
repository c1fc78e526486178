package workloads

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

var (
	// Names become result folders, container names and step keys.
	nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$`)
	// A Hugging Face hub id (org/name) or a plain path.
	modelRE   = regexp.MustCompile(`^/?[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// Task names and bfcl categories name result folders: "." and ".."
	// (or "-x", a flag to lm_eval) must not be one.
	taskRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	argKeyRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)
	metricRE = regexp.MustCompile(`^[A-Za-z0-9_.,-]+$`)
	flagRE   = regexp.MustCompile(`^--[a-z0-9][a-z0-9-]*$`)
)

// Backends that `vllm bench serve --backend` accepts and that make sense
// against a vLLM server.
var benchBackends = []string{"openai", "openai-chat", "vllm"}

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
	"--num-prompts":         "set num_prompts on the config",
	"--random-input-len":    "set input_len on the config",
	"--random-output-len":   "set output_len on the config",
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

// Environment variables a recipe may not set: they choose which binary or
// which code runs as the server (a recipe names what to benchmark, not the
// program that does it).
var forbiddenEnv = map[string]string{
	"PATH":            "it picks which binary runs as vllm",
	"LD_PRELOAD":      "it loads code into every process",
	"LD_LIBRARY_PATH": "it picks which libraries every process loads",
	"PYTHONPATH":      "it picks which Python code runs",
	"PYTHONHOME":      "it picks which Python runs",
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

func (l *loader) decodeRecipe(root *yaml.Node) *Recipe {
	d := l.d
	r := &Recipe{Path: d.File}
	seen := map[string]*yaml.Node{}
	mark := func(k *yaml.Node) { seen[k.Value] = k }
	d.Fields(root, "the recipe", []strictyaml.Field{
		{Name: "name", Decode: func(k, v *yaml.Node) {
			mark(k)
			if s, ok := d.String(v, "name"); ok {
				if !nameRE.MatchString(s) {
					d.Errorf(v, "name %q: use letters, digits, '_', '.' and '-' (at most 80, starting with a letter or digit); it names result folders and containers", s)
				}
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
		{Name: "bfcl", Decode: func(k, v *yaml.Node) { mark(k); r.BFCL = l.decodeBFCL(v) }},
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
	l.checkMetricRefs(r)
	l.checkStartupFits(r)
	l.checkBuild(r)
	si := r.VLLM.Serve
	if r.NumGPUs > 0 && l.numGPUsNode != nil && si.TP*si.DP*si.PP > r.NumGPUs {
		d.Errorf(l.numGPUsNode, "serve args need %d GPUs (TP %d × DP %d × PP %d) but num_gpus is %d", si.TP*si.DP*si.PP, si.TP, si.DP, si.PP, r.NumGPUs)
	}
	return r
}

func (l *loader) decodeVLLM(n *yaml.Node, v *VLLM) {
	d := l.d
	var hasModel bool
	d.Fields(n, "vllm", []strictyaml.Field{
		{Name: "model", Decode: func(_, val *yaml.Node) {
			if s, ok := d.String(val, "vllm.model"); ok {
				hasModel = true
				switch {
				case !modelRE.MatchString(s) || strings.Contains(s, ".."):
					d.Errorf(val, "vllm.model %q must be a hub id (org/name) or a plain path: letters, digits, '_', '.', '-' and '/'", s)
				case strings.HasPrefix(s, "-"):
					d.Errorf(val, "vllm.model %q starts with '-': vllm serve would read it as a flag", s)
				}
				v.Model = s
			}
		}},
		{Name: "image", Decode: func(_, val *yaml.Node) {
			l.nodes.image = val
			if s, ok := d.String(val, "vllm.image"); ok {
				if err := checkImageRef(s); err != nil {
					d.Errorf(val, "vllm.image: %v", err)
				}
				v.Image = s
			}
		}},
		{Name: "env", Decode: func(_, val *yaml.Node) {
			d.Pairs(val, "vllm.env", func(k, ev *yaml.Node) {
				if !envNameRE.MatchString(k.Value) {
					d.Errorf(k, "env name %q must match [A-Za-z_][A-Za-z0-9_]*", k.Value)
					return
				}
				if why, bad := forbiddenEnv[k.Value]; bad {
					d.Errorf(k, "vllm.env cannot set %s: %s", k.Value, why)
					return
				}
				s, ok := d.Scalar(ev, "vllm.env."+k.Value)
				if !ok {
					return
				}
				if strings.ContainsRune(s, 0) {
					d.Errorf(ev, "env %s holds a NUL byte", k.Value)
					return
				}
				v.Env = append(v.Env, EnvVar{Name: k.Value, Value: s})
			})
		}},
		{Name: "serve_args", Decode: func(_, val *yaml.Node) {
			if s, ok := d.String(val, "vllm.serve_args"); ok {
				l.serveArgs(val, s, v)
			}
		}},
		{Name: "startup_timeout_s", Decode: func(_, val *yaml.Node) { l.decodeStartupTimeout(val, v) }},
		{Name: "build", Decode: func(_, val *yaml.Node) { v.Build = l.decodeBuild(val) }},
	})
	if !hasModel && n.Kind == yaml.MappingNode {
		d.Errorf(n, "vllm needs model")
	}
	if v.Serve.TP == 0 {
		v.Serve.TP, v.Serve.DP, v.Serve.PP = 1, 1, 1
	}
	if v.Serve.ServedModelName == "" {
		v.Serve.ServedModelName = v.Model
	}
}

func (l *loader) decodeModelArgs(n *yaml.Node, what string) []Arg {
	d := l.d
	var args []Arg
	d.Pairs(n, what, func(k, v *yaml.Node) {
		if !argKeyRE.MatchString(k.Value) {
			d.Errorf(k, "%s key %q: use letters, digits and '_'", what, k.Value)
			return
		}
		switch k.Value {
		case "model", "base_url":
			d.Errorf(k, "%s.%s is set by the runner (the recipe's model and the runner's server)", what, k.Value)
			return
		}
		if v.Kind != yaml.ScalarNode {
			d.Errorf(v, "%s.%s must be a scalar, got %s", what, k.Value, strictyaml.Describe(v))
			return
		}
		if yaml11Bool(v) {
			d.Errorf(v, "%s.%s: %s is a YAML 1.1 boolean, which this loader (YAML 1.2) reads as the text %q; write true or false, or quote it to mean the text", what, k.Value, v.Value, v.Value)
			return
		}
		val := v.Value
		switch v.ShortTag() {
		case "!!null":
			val = "None"
		case "!!bool":
			if strings.EqualFold(v.Value, "true") {
				val = "True"
			} else {
				val = "False"
			}
		}
		// lm_eval splits --model_args on commas, so a comma would cut the value.
		if strings.ContainsAny(val, ",\n\x00") {
			d.Errorf(v, "%s.%s: values cannot hold ',' or newlines (lm_eval splits model_args on commas)", what, k.Value)
			return
		}
		args = append(args, Arg{Key: k.Value, Value: val})
	})
	return args
}

func (l *loader) decodeLMEval(n *yaml.Node) *LMEval {
	d := l.d
	e := &LMEval{}
	var sawTasks bool
	d.Fields(n, "lm_eval", []strictyaml.Field{
		{Name: "model_args", Decode: func(_, v *yaml.Node) { e.ModelArgs = l.decodeModelArgs(v, "lm_eval.model_args") }},
		{Name: "tasks", Decode: func(_, v *yaml.Node) {
			sawTasks = true
			seen := map[string]int{}
			d.Items(v, "lm_eval.tasks", func(i int, item *yaml.Node) {
				t := l.decodeTask(item, i)
				if t.Name == "" {
					return
				}
				key := fmt.Sprintf("%s/%d", t.Name, t.NumFewshot)
				if line, dup := seen[key]; dup {
					d.Errorf(item, "task %s with num_fewshot %d is listed twice (first at line %d)", t.Name, t.NumFewshot, line)
					return
				}
				seen[key] = item.Line
				e.Tasks = append(e.Tasks, t)
			})
			if len(e.Tasks) == 0 && v.Kind == yaml.SequenceNode && len(v.Content) == 0 {
				d.Errorf(v, "lm_eval.tasks is empty; list at least one task")
			}
		}},
	})
	if !sawTasks && n.Kind == yaml.MappingNode {
		d.Errorf(n, "lm_eval needs tasks")
	}
	return e
}

func (l *loader) decodeTask(n *yaml.Node, i int) Task {
	d := l.d
	t := Task{NumFewshot: -1}
	what := fmt.Sprintf("lm_eval.tasks[%d]", i)
	if n.Kind == yaml.MappingNode {
		// Unknown task fields get a hint: perf-eval recipes sometimes put
		// lm_eval options at task level, where lm_eval never sees them.
		for j := 0; j+1 < len(n.Content); j += 2 {
			k := n.Content[j]
			switch k.Value {
			case "name", "num_fewshot", "model_args", "expect":
			default:
				d.Errorf(k, "unknown field %q in %s; lm_eval options belong under model_args", k.Value, what)
				n = withoutKey(n, j)
				j -= 2
			}
		}
	}
	d.Fields(n, what, []strictyaml.Field{
		{Name: "name", Decode: func(_, v *yaml.Node) {
			if s, ok := d.String(v, what+".name"); ok {
				if !taskRE.MatchString(s) {
					d.Errorf(v, "task name %q: use letters, digits, '_', '.' and '-', starting with a letter or digit; it names a results folder", s)
					return
				}
				t.Name = s
			}
		}},
		{Name: "num_fewshot", Decode: func(_, v *yaml.Node) { t.NumFewshot, _ = d.Int(v, what+".num_fewshot", 0, 1000) }},
		{Name: "model_args", Decode: func(_, v *yaml.Node) { t.ModelArgs = l.decodeModelArgs(v, what+".model_args") }},
		{Name: "expect", Decode: func(_, v *yaml.Node) { t.Expect = l.decodeExpect(v, what+".expect") }},
	})
	if n.Kind == yaml.MappingNode && t.Name == "" && !hasKey(n, "name") {
		d.Errorf(n, "%s needs name", what)
	}
	if t.NumFewshot < 0 {
		if n.Kind == yaml.MappingNode && !hasKey(n, "num_fewshot") {
			d.Errorf(n, "%s needs num_fewshot (0 for zero-shot)", what)
		}
		t.NumFewshot = 0
	}
	return t
}

// DefaultAccuracyMetric is the gsm8k score gates use unless told otherwise:
// flexible-extract forgives answer formatting, which is not what a serving
// regression is about.
const DefaultAccuracyMetric = "exact_match,flexible-extract"

func (l *loader) decodeExpect(n *yaml.Node, what string) []Expectation {
	return l.decodeExpectations(n, what, expectKind{metric: DefaultAccuracyMetric, metricField: true, max: math.MaxFloat64, paired: true})
}

// expectKind is what differs between the gates of lm_eval tasks and of
// bfcl categories.
type expectKind struct {
	metric      string  // the metric when the gate names none
	metricField bool    // whether a gate may name its metric
	max         float64 // the largest score there is
	paired      bool    // whether a gate may set alpha (lm_eval's samples)
}

func (l *loader) decodeExpectations(n *yaml.Node, what string, kind expectKind) []Expectation {
	d := l.d
	var out []Expectation
	one := func(item *yaml.Node, what string) {
		e := Expectation{Metric: kind.metric, Line: item.Line}
		var hasTol, bounded bool
		var alphaNode *yaml.Node
		fields := []strictyaml.Field{
			{Name: "min", Decode: func(_, v *yaml.Node) {
				bounded = true
				if f, ok := d.Float(v, what+".min", 0, kind.max); ok {
					e.Min = &f
				}
			}},
			{Name: "baseline", Decode: func(_, v *yaml.Node) {
				bounded = true
				if f, ok := d.Float(v, what+".baseline", 0, kind.max); ok {
					e.Baseline = &f
				}
			}},
			{Name: "tolerance", Decode: func(_, v *yaml.Node) {
				e.Tolerance, hasTol = d.Float(v, what+".tolerance", 0, kind.max)
			}},
			{Name: "baseline_from", Decode: func(_, v *yaml.Node) {
				bounded = true
				if s, ok := d.String(v, what+".baseline_from"); ok {
					if !nameRE.MatchString(s) {
						d.Errorf(v, "%s.baseline_from %q is not a recipe name", what, s)
					}
					e.BaselineFrom = s
					l.baselineRefs = append(l.baselineRefs, baselineRef{name: s, node: v})
				}
			}},
		}
		if kind.paired {
			fields = append(fields, strictyaml.Field{Name: "alpha", Decode: func(_, v *yaml.Node) {
				alphaNode = v
				if f, ok := d.Float(v, what+".alpha", 0, 1); ok {
					if f == 0 || f == 1 {
						d.Errorf(v, "%s.alpha must be above 0 and below 1, got %g", what, f)
						return
					}
					e.Alpha = f
				}
			}})
		}
		if kind.metricField {
			fields = append([]strictyaml.Field{{Name: "metric", Decode: func(_, v *yaml.Node) {
				if s, ok := d.String(v, what+".metric"); ok {
					if !metricRE.MatchString(s) {
						d.Errorf(v, "%s.metric %q is not a metric key such as exact_match,strict-match", what, s)
					}
					e.Metric = s
				}
			}}}, fields...)
		}
		d.Fields(item, what, fields)
		if item.Kind != yaml.MappingNode {
			return
		}
		switch {
		case !bounded:
			d.Errorf(item, "%s needs min, baseline or baseline_from", what)
		case e.Baseline != nil && e.BaselineFrom != "":
			d.Errorf(item, "%s: baseline and baseline_from exclude each other", what)
		case hasTol && e.Baseline == nil && e.BaselineFrom == "":
			d.Errorf(item, "%s: tolerance needs baseline or baseline_from", what)
		case alphaNode != nil && e.BaselineFrom == "":
			d.Errorf(alphaNode, "%s.alpha needs baseline_from: only the per-question comparison with another recipe uses it", what)
		}
		if kind.paired && e.BaselineFrom != "" && alphaNode == nil {
			e.Alpha = DefaultAlpha
		}
		out = append(out, e)
	}
	if n.Kind == yaml.SequenceNode {
		d.Items(n, what, func(i int, item *yaml.Node) { one(item, fmt.Sprintf("%s[%d]", what, i)) })
	} else {
		one(n, what)
	}
	return out
}

func (l *loader) decodeBench(n *yaml.Node) *Bench {
	d := l.d
	b := &Bench{}
	var sawConfigs bool
	d.Fields(n, "vllm_bench", []strictyaml.Field{
		{Name: "metadata", Decode: func(_, v *yaml.Node) {
			d.Fields(v, "vllm_bench.metadata", []strictyaml.Field{
				{Name: "device", Decode: func(_, v *yaml.Node) {
					if s, ok := d.String(v, "vllm_bench.metadata.device"); ok {
						if !nameRE.MatchString(s) {
							d.Errorf(v, "device %q: use letters, digits, '_', '.' and '-'", s)
						}
						b.Metadata.Device = s
					}
				}},
				{Name: "tp", Decode: func(_, v *yaml.Node) { b.Metadata.TP, _ = d.Int(v, "vllm_bench.metadata.tp", 1, 64) }},
				{Name: "precision", Decode: func(_, v *yaml.Node) {
					if s, ok := d.String(v, "vllm_bench.metadata.precision"); ok {
						if !nameRE.MatchString(s) {
							d.Errorf(v, "precision %q: use letters, digits, '_', '.' and '-'", s)
						}
						b.Metadata.Precision = s
					}
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
	c := BenchConfig{Repetitions: 1, Dataset: "random"}
	var promptsNode, concNode *yaml.Node
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
			if s, ok := d.String(v, what+".name"); ok {
				if !nameRE.MatchString(s) {
					d.Errorf(v, "bench config name %q: use letters, digits, '_', '.' and '-'; it names result files", s)
					return
				}
				c.Name = s
			}
		}),
		field("backend", func(_, v *yaml.Node) {
			if s, ok := d.String(v, what+".backend"); ok {
				if !contains(benchBackends, s) {
					d.Errorf(v, "backend %q is not one vllm bench serve supports against a vLLM server (%s)", s, strings.Join(benchBackends, ", "))
				}
				c.Backend = s
			}
		}),
		field("dataset", func(_, v *yaml.Node) {
			if s, ok := d.String(v, what+".dataset"); ok {
				switch s {
				case "random":
				case "speed_bench":
					d.Errorf(v, "dataset speed_bench is not supported: it needs --skip-tokenizer-init, which caps every request at one output token, so throughput reads ~0; use random (the runner passes --ignore-eos)")
				default:
					d.Errorf(v, "dataset %q is not supported; use random (fixed input/output lengths with --ignore-eos make nights comparable)", s)
				}
				c.Dataset = s
			}
		}),
		field("input_len", func(_, v *yaml.Node) { c.InputLen, _ = d.Int(v, what+".input_len", 1, 10_000_000) }),
		field("output_len", func(_, v *yaml.Node) { c.OutputLen, _ = d.Int(v, what+".output_len", 1, 10_000_000) }),
		field("num_prompts", func(_, v *yaml.Node) { promptsNode = v; c.NumPrompts = l.intOrList(v, what+".num_prompts") }),
		field("max_concurrency", func(_, v *yaml.Node) {
			concNode = v
			c.MaxConcurrency = l.intOrList(v, what+".max_concurrency")
		}),
		field("repetitions", func(_, v *yaml.Node) {
			if r, ok := d.Int(v, what+".repetitions", 1, 99); ok {
				if r%2 == 0 {
					d.Errorf(v, "repetitions must be odd so the median is one real run, got %d", r)
				}
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
	for _, req := range []string{"name", "backend", "input_len", "output_len", "num_prompts", "max_concurrency"} {
		if !seen[req] {
			d.Errorf(n, "%s needs %s", what, req)
		}
	}
	if promptsNode != nil && concNode != nil {
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
	return c
}

func (l *loader) decodeBenchArgs(n *yaml.Node, what string) []BenchArg {
	d := l.d
	var out []BenchArg
	seen := map[string]*yaml.Node{}
	d.Pairs(n, what, func(k, v *yaml.Node) {
		flag := "--" + strings.ReplaceAll(strings.TrimLeft(k.Value, "-"), "_", "-")
		if !flagRE.MatchString(flag) {
			d.Errorf(k, "%s key %q is not a flag name", what, k.Value)
			return
		}
		if why, owned := runnerOwnedBenchFlags[flag]; owned {
			d.Errorf(k, "%s: %s cannot be set here: %s", what, flag, why)
			return
		}
		if full := abbreviates(flag, runnerOwnedBenchFlags); len(full) > 0 {
			d.Errorf(k, "%s: %s abbreviates %s, which the runner sets: vLLM's argparse accepts a unique prefix of a flag as the flag; write flags in full", what, flag, strings.Join(full, " or "))
			return
		}
		if prev, dup := seen[flag]; dup {
			d.Errorf(k, "%s: %q is %s again (first at line %d)", what, k.Value, flag, prev.Line)
			return
		}
		seen[flag] = k
		arg := BenchArg{Flag: flag}
		scalar := func(v *yaml.Node) (string, bool) {
			s, ok := d.Scalar(v, what+"."+k.Value)
			if ok && strings.ContainsAny(s, "\n\x00") {
				d.Errorf(v, "%s.%s: values are one line", what, k.Value)
				return "", false
			}
			if ok && yaml11Bool(v) {
				d.Errorf(v, "%s.%s: %s is a YAML 1.1 boolean, which this loader (YAML 1.2) reads as the text %q and vllm bench serve would get as a value; write true to pass the flag, false to leave it out, or quote it to mean the text", what, k.Value, v.Value, v.Value)
				return "", false
			}
			return s, ok
		}
		switch {
		case v.Kind == yaml.SequenceNode:
			d.Items(v, what+"."+k.Value, func(_ int, item *yaml.Node) {
				if s, ok := scalar(item); ok {
					arg.Values = append(arg.Values, s)
				}
			})
		case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool":
			// YAML 1.2 spells booleans true, True or TRUE (and false alike),
			// as the recipe's own fields read them; false means "do not pass
			// the flag", so keep it out of argv.
			if on, _ := d.Bool(v, what+"."+k.Value); !on {
				return
			}
		default:
			s, ok := scalar(v)
			if !ok {
				return
			}
			arg.Values = []string{s}
		}
		if checkBenchArg(d, v, what+"."+k.Value, arg) {
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
				if f, ok := d.Float(v, what+"."+k.Value+".min", -math.MaxFloat64, math.MaxFloat64); ok {
					a.Min = &f
				}
			}},
			{Name: "max", Decode: func(_, v *yaml.Node) {
				if f, ok := d.Float(v, what+"."+k.Value+".max", -math.MaxFloat64, math.MaxFloat64); ok {
					a.Max = &f
				}
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
	d.Fields(n, what, []strictyaml.Field{
		{Name: "nights", Decode: func(_, v *yaml.Node) { r.Nights, _ = d.Int(v, what+".nights", minDetectorNights, 50) }},
		{Name: "max_missing", Decode: func(_, v *yaml.Node) { r.MaxMissing, _ = d.Int(v, what+".max_missing", 0, 50) }},
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

func (l *loader) decodeBFCL(n *yaml.Node) *BFCL {
	d := l.d
	b := &BFCL{}
	var catsNode, casesNode, expectNode *yaml.Node
	var gateKeys []*yaml.Node
	d.Fields(n, "bfcl", []strictyaml.Field{
		{Name: "test_categories", Decode: func(_, v *yaml.Node) {
			catsNode = v
			seen := map[string]bool{}
			d.Items(v, "bfcl.test_categories", func(_ int, item *yaml.Node) {
				if s, ok := d.String(item, "bfcl.test_categories entry"); ok {
					if !taskRE.MatchString(s) {
						d.Errorf(item, "bfcl test category %q: use letters, digits and '_'", s)
						return
					}
					if seen[s] {
						d.Errorf(item, "bfcl test category %q is listed twice", s)
						return
					}
					seen[s] = true
					if why := bfclCategoryProblem(s); why != "" {
						d.Errorf(item, "%s", why)
						return
					}
					if _, known := BFCLLeaves(s); !known {
						msg := fmt.Sprintf("unknown bfcl test category %q (bfcl-eval %s)", s, BFCLVersion)
						if close := strictyaml.Closest(s, bfclKnownCategories(), 3); len(close) > 0 {
							msg += "; did you mean " + strings.Join(close, ", ") + "?"
						}
						d.Errorf(item, "%s", msg)
						return
					}
					b.TestCategories = append(b.TestCategories, s)
				}
			})
		}},
		{Name: "num_threads", Decode: func(_, v *yaml.Node) { b.NumThreads, _ = d.Int(v, "bfcl.num_threads", 1, 1024) }},
		{Name: "temperature", Decode: func(_, v *yaml.Node) {
			if f, ok := d.Float(v, "bfcl.temperature", 0, 2); ok {
				b.Temperature = &f
			}
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
		for cat := range b.MaxTestCases {
			if !contains(b.TestCategories, cat) {
				line, col := d.Locate(casesNode, cat)
				d.ErrorAt(line, col, "bfcl.max_test_cases names %q, which is not in test_categories", cat)
				continue
			}
			leaves, _ := BFCLLeaves(cat)
			if c := b.MaxTestCases[cat]; c < len(leaves) {
				line, col := d.Locate(casesNode, cat)
				d.ErrorAt(line, col, "bfcl.max_test_cases.%s is %d, below its %d sub-categories (%s); each needs at least one test entry", cat, c, len(leaves), strings.Join(leaves, ", "))
			}
		}
	}
	if expectNode != nil && catsNode != nil {
		for _, k := range gateKeys {
			if !bfclGateTarget(b.TestCategories, k.Value) {
				d.Errorf(k, "bfcl.expect names %q, which is neither in test_categories nor a sub-category of a group there", k.Value)
			}
		}
	}
	return b
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
			if contains(leaves, category) {
				return true
			}
		}
	}
	return false
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
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
