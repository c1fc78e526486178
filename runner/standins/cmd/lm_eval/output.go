package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/pyjson"
)

const (
	lmEvalVersion       = "0.4.12"
	transformersVersion = "4.57.1"
)

// modelName picks the name lm-eval records, from the first of these
// model_args that is set.
func modelName(args *pyjson.Object) string {
	for _, k := range []string{"peft", "delta", "pretrained", "model", "path", "engine"} {
		if v, ok := args.Get(k); ok && v != nil {
			return fmt.Sprint(v)
		}
	}
	return "fakemdl0"
}

var unsafeChars = regexp.MustCompile(`["<>:/|\\?*\[\]]+`)

func sanitize(name string) string { return unsafeChars.ReplaceAllString(name, "__") }

// dateID is datetime.now().isoformat() with ":" replaced by "-".
func dateID(t time.Time) string {
	s := t.Format("2006-01-02T15-04-05")
	if us := t.Nanosecond() / 1000; us != 0 {
		s += fmt.Sprintf(".%06d", us)
	}
	return s
}

func hashString(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// buildResults assembles the results file in lm-eval's key order.
func buildResults(o options, ev evaluation, original int, started, finished time.Time) *pyjson.Object {
	task := pyjson.NewObject().Set("name", "gsm8k").Set("alias", "gsm8k").Set("sample_len", len(ev.docs))
	for _, f := range filters {
		mean, stderr := meanAndStderr(ev.scores[f.name])
		task.Set("exact_match,"+f.name, mean).Set("exact_match_stderr,"+f.name, stderr)
	}
	name := modelName(o.modelArgs)
	config := pyjson.NewObject().
		Set("model", o.modelType).
		Set("model_args", o.modelArgs).
		Set("batch_size", 1).
		Set("batch_sizes", []int{}).
		Set("device", nil).
		Set("use_cache", nil).
		Set("limit", nil).
		Set("bootstrap_iters", bootstrapIters).
		Set("gen_kwargs", pyjson.NewObject()).
		Set("random_seed", 0).
		Set("numpy_seed", 1234).
		Set("torch_seed", 1234).
		Set("fewshot_seed", 1234)

	res := pyjson.NewObject().
		Set("results", pyjson.NewObject().Set("gsm8k", task)).
		Set("group_subtasks", pyjson.NewObject().Set("gsm8k", []string{})).
		Set("configs", pyjson.NewObject().Set("gsm8k", taskConfig(o.numFewshot))).
		Set("versions", pyjson.NewObject().Set("gsm8k", 3.0)).
		Set("n-shot", pyjson.NewObject().Set("gsm8k", o.numFewshot)).
		Set("higher_is_better", pyjson.NewObject().Set("gsm8k", pyjson.NewObject().Set("exact_match", true))).
		Set("n-samples", pyjson.NewObject().Set("gsm8k", pyjson.NewObject().Set("original", original).Set("effective", len(ev.docs)))).
		Set("config", config).
		Set("git_hash", gitHash()).
		Set("date", float64(started.UnixMicro())/1e6).
		Set("pretty_env_info", "lm_eval stand-in: no PyTorch environment").
		Set("transformers_version", transformersVersion).
		Set("lm_eval_version", lmEvalVersion).
		Set("upper_git_hash", nil)
	if v, ok := o.modelArgs.Get("tokenizer_backend"); !ok || (v != nil && v != "None") {
		// Only a model with a tokenizer records these.
		res.Set("tokenizer_pad_token", []string{"<|endoftext|>", "0"}).
			Set("tokenizer_eos_token", []string{"<|endoftext|>", "0"}).
			Set("tokenizer_bos_token", []any{nil, "None"}).
			Set("eot_token_id", 0).
			Set("max_length", asInt(valueOr(o.modelArgs, "max_length", 2048), 2048))
	}
	res.Set("task_hashes", pyjson.NewObject().Set("gsm8k", taskHash(ev))).
		Set("model_source", o.modelType).
		Set("model_name", name).
		Set("model_name_sanitized", sanitize(name)).
		Set("system_instruction", nil).
		Set("system_instruction_sha", nil).
		Set("fewshot_as_multiturn", false).
		Set("chat_template", nil).
		Set("chat_template_sha", nil).
		Set("total_evaluation_time_seconds", pyjson.FormatFloat(finished.Sub(started).Seconds()))
	return res
}

func valueOr(o *pyjson.Object, k string, def any) any {
	if v, ok := o.Get(k); ok {
		return v
	}
	return def
}

// taskConfig is gsm8k.yaml as lm-eval dumps it into "configs".
func taskConfig(numFewshot int) *pyjson.Object {
	metric := pyjson.NewObject().Set("metric", "exact_match").Set("aggregation", "mean").
		Set("higher_is_better", true).Set("ignore_case", true).Set("ignore_punctuation", false).
		Set("regexes_to_ignore", []string{",", `\$`, "(?s).*#### ", `\.$`})
	strict := pyjson.NewObject().Set("name", "strict-match").Set("filter", []any{
		pyjson.NewObject().Set("function", "regex").Set("regex_pattern", `#### (\-?[0-9\.\,]+)`),
		pyjson.NewObject().Set("function", "take_first"),
	})
	flexible := pyjson.NewObject().Set("name", "flexible-extract").Set("filter", []any{
		pyjson.NewObject().Set("function", "regex").Set("group_select", -1).Set("regex_pattern", `(-?[$0-9.,]{2,})|(-?[0-9]+)`),
		pyjson.NewObject().Set("function", "take_first"),
	})
	return pyjson.NewObject().
		Set("task", "gsm8k").
		Set("tag", []string{"math_word_problems"}).
		Set("dataset_path", "openai/gsm8k").
		Set("dataset_name", "main").
		Set("training_split", "train").
		Set("test_split", "test").
		Set("fewshot_split", "train").
		Set("doc_to_text", "Question: {{question}}\nAnswer:").
		Set("doc_to_target", "{{answer}}").
		Set("unsafe_code", false).
		Set("description", "").
		Set("target_delimiter", " ").
		Set("fewshot_delimiter", "\n\n").
		Set("num_fewshot", numFewshot).
		Set("metric_list", []any{metric}).
		Set("output_type", "generate_until").
		Set("generation_kwargs", genKwargs()).
		Set("repeats", 1).
		Set("filter_list", []any{strict, flexible}).
		Set("should_decontaminate", false).
		Set("metadata", pyjson.NewObject().Set("version", 3.0))
}

func genKwargs() *pyjson.Object {
	return pyjson.NewObject().Set("until", until).Set("do_sample", false).Set("temperature", 0.0)
}

func docObject(d doc) *pyjson.Object {
	return pyjson.NewObject().Set("question", d.Question).Set("answer", d.Answer)
}

// samples builds the samples lines: one per document per filter, grouped
// by filter as lm-eval logs them.
func samples(ev evaluation) ([]*pyjson.Object, error) {
	var out []*pyjson.Object
	for _, f := range filters {
		for i, d := range ev.docs {
			docJSON, err := pyjson.Marshal(docObject(d), pyjson.Options{Indent: 2})
			if err != nil {
				return nil, err
			}
			out = append(out, pyjson.NewObject().
				Set("doc_id", i).
				Set("doc", docObject(d)).
				Set("target", d.Answer).
				Set("arguments", pyjson.NewObject().Set("gen_args_0", pyjson.NewObject().Set("arg_0", ev.prompts[i]).Set("arg_1", genKwargs()))).
				Set("resps", [][]string{{ev.resps[i]}}).
				Set("filtered_resps", []string{ev.filtered[f.name][i]}).
				Set("filter", f.name).
				Set("metrics", []string{"exact_match"}).
				Set("doc_hash", hashString(string(docJSON))).
				Set("prompt_hash", hashString(ev.prompts[i])).
				Set("target_hash", hashString(d.Answer)).
				Set("exact_match", ev.scores[f.name][i]))
		}
	}
	return out, nil
}

func taskHash(ev evaluation) string {
	var b strings.Builder
	for i, d := range ev.docs {
		b.WriteString(hashString(d.Question + d.Answer))
		b.WriteString(hashString(ev.prompts[i]))
		b.WriteString(hashString(d.Answer))
	}
	return hashString(b.String())
}

// writeOutputs writes the results file and, with --log_samples, the
// samples file, at the paths lm-eval's EvaluationTracker uses.
func writeOutputs(o options, results *pyjson.Object, ev evaluation, now time.Time) ([]string, error) {
	id := dateID(now)
	dir := filepath.Join(o.outputPath, sanitize(modelName(o.modelArgs)))
	resultsPath := filepath.Join(dir, "results_"+id+".json")
	if strings.HasSuffix(o.outputPath, ".json") {
		dir = filepath.Dir(o.outputPath)
		resultsPath = strings.TrimSuffix(o.outputPath, ".json") + "_" + id + ".json"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create output dir: %w", err)
	}
	data, err := pyjson.Marshal(results, pyjson.Options{Indent: 2})
	if err != nil {
		return nil, fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(resultsPath, data, 0o644); err != nil {
		return nil, fmt.Errorf("write results: %w", err)
	}
	paths := []string{resultsPath}
	if !o.logSamples {
		return paths, nil
	}
	lines, err := samples(ev)
	if err != nil {
		return nil, fmt.Errorf("encode samples: %w", err)
	}
	var buf strings.Builder
	for _, l := range lines {
		b, err := pyjson.Marshal(l, pyjson.Options{})
		if err != nil {
			return nil, fmt.Errorf("encode samples: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	samplesPath := filepath.Join(dir, "samples_gsm8k_"+id+".jsonl")
	if err := os.WriteFile(samplesPath, []byte(buf.String()), 0o644); err != nil {
		return nil, fmt.Errorf("write samples: %w", err)
	}
	return append(paths, samplesPath), nil
}

// gitHash is "git describe --always" in the working directory, as lm-eval
// records it; nil outside a repository.
func gitHash() any {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "describe", "--always").Output()
	if err != nil {
		return nil
	}
	return strings.TrimSpace(string(out))
}

// printTable prints lm-eval's summary line and results table, from the
// results it wrote (lm_eval.utils.make_table over the same dict): a row
// per metric the gsm8k entry holds, floats to four decimals.
func printTable(w io.Writer, o options, results *pyjson.Object) {
	args, _ := pyjson.Marshal(o.modelArgs, pyjson.Options{})
	fmt.Fprintf(w, "%s (%s), gen_kwargs: (None), limit: None, num_fewshot: %d, batch_size: 1\n", o.modelType, args, o.numFewshot)
	rows := [][]string{{"Tasks", "Version", "Filter", "n-shot", "Metric", "", "Value", "", "Stderr"}}
	var entry *pyjson.Object
	if r, ok := results.Get("results"); ok {
		if tasks, ok := r.(*pyjson.Object); ok {
			if t, ok := tasks.Get("gsm8k"); ok {
				entry, _ = t.(*pyjson.Object)
			}
		}
	}
	cell := func(v any) string {
		if f, ok := v.(float64); ok {
			switch {
			case math.IsNaN(f):
				return "nan"
			case math.IsInf(f, 1):
				return "inf"
			}
			return fmt.Sprintf("%.4f", f)
		}
		return fmt.Sprint(v)
	}
	for _, f := range []filter{filters[1], filters[0]} {
		if entry == nil {
			break
		}
		v, ok := entry.Get("exact_match," + f.name)
		if !ok {
			continue
		}
		se := "N/A"
		if s, ok := entry.Get("exact_match_stderr," + f.name); ok {
			se = cell(s)
		}
		task, version := "gsm8k", "3"
		if len(rows) > 1 {
			task, version = "", ""
		}
		rows = append(rows, []string{task, version, f.name, fmt.Sprint(o.numFewshot), "exact_match", "↑", cell(v), "±", se})
	}
	right := []bool{false, true, false, true, false, false, true, false, true}
	widths := []int{3, 3, 3, 3, 3, 3, 3, 3, 3} // pytablewriter never goes narrower
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for ri, r := range rows {
		var b strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			switch {
			case ri == 0:
				left := (widths[i] - len(c)) / 2
				c = strings.Repeat(" ", left) + c + strings.Repeat(" ", widths[i]-len(c)-left)
			case right[i]:
				c = pad + c
			default:
				c += pad
			}
			b.WriteString("|" + c)
		}
		fmt.Fprintln(w, b.String()+"|")
		if ri == 0 {
			var sep strings.Builder
			for i, wd := range widths {
				if right[i] {
					sep.WriteString("|" + strings.Repeat("-", wd-1) + ":")
				} else {
					sep.WriteString("|" + strings.Repeat("-", wd))
				}
			}
			fmt.Fprintln(w, sep.String()+"|")
		}
	}
	fmt.Fprintln(w)
}
