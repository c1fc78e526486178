package workloads

import (
	"fmt"
	"math"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

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
		case "pretrained", "tokenizer", "revision":
			// lm_eval loads its tokenizer from the model's repository on the
			// job's host, beside the shared tools venv: a recipe may not
			// point it at another repository or revision.
			d.Errorf(k, "%s.%s cannot be set: lm_eval's tokenizer comes from the recipe's model", what, k.Value)
			return
		case "trust_remote_code":
			if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool" && strings.EqualFold(v.Value, "false") {
				break
			}
			d.Errorf(k, "%s.trust_remote_code cannot be turned on: lm_eval would run the model repository's tokenizer code on the job's host", what)
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
		if k.Value == "tokenizer_backend" && val != "None" && val != "none" && val != "remote" {
			// huggingface imports transformers and tiktoken knows only
			// OpenAI's models; the locked tool set serves neither.
			d.Errorf(v, "%s.tokenizer_backend %q: the locked lm-eval tool set has no transformers; use null (lm_eval sends text; the runner's default) or remote (the server tokenizes)", what, val)
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
		{Name: "timeout_minutes", Decode: func(_, v *yaml.Node) { e.TimeoutMinutes, _ = d.Int(v, "lm_eval.timeout_minutes", 1, 24*60) }},
		{Name: "tasks", Decode: func(_, v *yaml.Node) {
			sawTasks = true
			seen := map[string]int{}
			d.Items(v, "lm_eval.tasks", func(i int, item *yaml.Node) {
				t := l.decodeTask(item, i)
				if t.Name == "" {
					return
				}
				// Results, gates and output folders go by task name: a
				// second entry of the same name would be judged by the
				// other's score, whatever its num_fewshot or model_args.
				if line, dup := seen[t.Name]; dup {
					d.Errorf(item, "task %s is listed twice, at lines %d and %d: its results are named after the task, so one entry's score would judge the other; keep one", t.Name, line, item.Line)
					return
				}
				seen[t.Name] = item.Line
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
			t.Name, _ = l.word(v, what+".name", taskRE, "task name", ": use letters, digits, '_', '.' and '-', starting with a letter or digit; it names a results folder")
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
