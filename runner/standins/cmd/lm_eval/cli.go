package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/pyjson"
	"github.com/benchkite/benchkite/runner/standins/argparse"
)

// Environment knobs; the standins package documentation describes them.
const envDocs = "FAKE_LMEVAL_DOCS"

const defaultDocs = 50

const prog = "lm-eval run"

func parser() *argparse.Parser {
	p := argparse.New(prog)
	v := argparse.Value
	p.Add(v, "--model", "-m")
	p.Add(v, "--tasks", "-t")
	p.Add(v, "--model_args", "-a")
	p.Add(v, "--num_fewshot", "-f")
	p.Add(v, "--batch_size", "-b")
	p.Add(v, "--max_batch_size")
	p.Add(v, "--device")
	p.Add(v, "--output_path", "-o")
	p.Add(v, "--limit", "-L")
	p.Add(v, "--samples", "-E")
	p.Add(v, "--use_cache", "-c")
	p.Add(v, "--cache_requests")
	p.Add(v, "--system_instruction")
	p.Add(v, "--include_path")
	p.Add(v, "--gen_kwargs")
	p.Add(v, "--verbosity", "-v")
	p.Add(v, "--wandb_args")
	p.Add(v, "--wandb_config_args")
	p.Add(v, "--hf_hub_log_args")
	p.Add(v, "--seed")
	p.Add(v, "--metadata")
	p.Add(v, "--bootstrap_iters")
	p.Add(argparse.Optional, "--apply_chat_template")
	for _, b := range []string{"--check_integrity", "--fewshot_as_multiturn", "--show_config",
		"--trust_remote_code", "--confirm_run_unsafe_code"} {
		p.Add(argparse.Bool, b)
	}
	p.Add(argparse.Bool, "--write_out", "-w")
	p.Add(argparse.Bool, "--log_samples", "-s")
	p.Add(argparse.Bool, "--predict_only", "-x")
	return p
}

// unsupported are real options the runner never passes; the stand-in
// fails on them rather than silently ignore what they would change.
var unsupported = []string{"--apply_chat_template", "--limit", "--gen_kwargs", "--batch_size", "--max_batch_size", "--bootstrap_iters"}

// bootstrapIters is lm-eval's default --bootstrap_iters, recorded in the
// results.
const bootstrapIters = 100000

// options is the parsed command line.
type options struct {
	modelType  string
	modelArgs  *pyjson.Object
	tasks      []string
	numFewshot int
	outputPath string
	logSamples bool
}

// run is the whole command; it returns the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "run" {
		args = args[1:] // lm-eval's legacy form inserts "run" itself
	}
	o, err := parseOptions(args)
	if err != nil {
		var usage *argparse.Error
		if errors.As(err, &usage) {
			usage.Print(stderr)
			return 2
		}
		return pyError(stderr, "ValueError", err.Error(), 1)
	}
	docCount, err := knobs(getenv)
	if err != nil {
		fmt.Fprintf(stderr, "lm_eval: %v\n", err)
		return 1
	}
	logf(stderr, "__main__", "Selected Tasks: ['%s']", strings.Join(o.tasks, "', '"))
	for _, task := range o.tasks {
		if task != "gsm8k" {
			return pyError(stderr, "ValueError", fmt.Sprintf("Tasks not found: %s. Try `lm-eval ls tasks` to list out all available names for task grouping; only (sub)tasks; tags; or all of the above, or pass '--verbosity DEBUG' to troubleshoot task registration issues.", task), 1)
		}
	}
	if o.modelType != "local-completions" {
		return pyError(stderr, "ValueError", fmt.Sprintf("Attempted to load model '%s', but no model for this name found! Supported model names: local-completions", o.modelType), 1)
	}
	api, err := newAPIClient(o)
	if err != nil {
		return pyError(stderr, "ValueError", err.Error(), 1)
	}

	started := time.Now()
	docs := makeDocs(docCount, testSeed)
	n := len(docs)
	logf(stderr, "api", "Building contexts for gsm8k on rank 0...")
	fewshot := makeFewshotPool(fewshotPool, trainSeed)
	prompts := make([]string, n)
	for i := range prompts {
		prompts[i] = buildPrompt(docs[i], fewshot, o.numFewshot, i)
	}
	logf(stderr, "evaluator", "Running generate_until requests")
	resps, err := api.generateAll(ctx, prompts)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "KeyboardInterrupt")
			return 130
		}
		return pyError(stderr, "RuntimeError", err.Error(), 1)
	}

	ev := score(docs[:n], prompts, resps)
	results := buildResults(o, ev, len(docs), started, time.Now())
	if err := overrideScore(results, getenv(envScore)); err != nil {
		return pyError(stderr, "ValueError", err.Error(), 2)
	}
	if o.outputPath != "" && getenv(envNoOutput) != "true" {
		paths, err := writeOutputs(o, results, ev, time.Now())
		if err != nil {
			return pyError(stderr, "OSError", err.Error(), 1)
		}
		for _, p := range paths {
			logf(stderr, "evaluation_tracker", "Saving results to %s", p)
		}
	}
	if d := getenv(envExitDelay); d != "" {
		wait, err := time.ParseDuration(d)
		if err != nil {
			return pyError(stderr, "ValueError", fmt.Sprintf("invalid %s=%q: %v", envExitDelay, d, err), 2)
		}
		// As real lm_eval spends writing the per-task samples after the
		// aggregated results, before it prints its table.
		time.Sleep(wait)
	}
	printTable(stdout, o, results)
	return 0
}

func parseOptions(args []string) (options, error) {
	r, err := parser().Parse(args)
	if err != nil {
		return options{}, err
	}
	for _, name := range unsupported {
		if r.Has(name) {
			return options{}, fmt.Errorf("%s is not supported by this stand-in", name)
		}
	}
	o := options{modelType: r.String("--model", "hf"), outputPath: r.String("--output_path", ""), logSamples: r.Bool("--log_samples")}
	if o.tasks = splitList(r.String("--tasks", "")); len(o.tasks) == 0 {
		return options{}, errors.New("Need to specify task to evaluate.")
	}
	if o.numFewshot, err = r.Int("--num_fewshot", 5); err != nil {
		return options{}, err
	}
	if o.modelArgs, err = parseKeyValues(r.String("--model_args", "")); err != nil {
		return options{}, err
	}
	if o.logSamples && o.outputPath == "" {
		return options{}, errors.New("Specify --output_path if providing --log_samples or --predict_only")
	}
	return o, nil
}

// parseKeyValues reads "k=v,k2=v2" with lm-eval's value typing: booleans,
// numbers and None become JSON values. (lm-eval also takes a JSON object,
// which the runner never passes.)
func parseKeyValues(s string) (*pyjson.Object, error) {
	out := pyjson.NewObject()
	s = strings.TrimSpace(s)
	if s == "" {
		return out, nil
	}
	if strings.HasPrefix(s, "{") {
		return nil, fmt.Errorf("JSON model_args are not supported by this stand-in")
	}
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("dictionary update sequence element %q has length 1; 2 is required", part)
		}
		out.Set(strings.TrimSpace(k), typedValue(strings.TrimSpace(v)))
	}
	return out, nil
}

var numberPattern = regexp.MustCompile(`^-?\d+$`)

func typedValue(v string) any {
	switch {
	case strings.EqualFold(v, "true"):
		return true
	case strings.EqualFold(v, "false"):
		return false
	case v == "None":
		return nil
	case numberPattern.MatchString(v):
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return f
	}
	return v
}

func splitList(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func knobs(getenv func(string) string) (docs int, err error) {
	docs = defaultDocs
	if v := getenv(envDocs); v != "" {
		if docs, err = strconv.Atoi(v); err != nil || docs < 1 {
			return 0, fmt.Errorf("invalid %s=%q: want a positive integer", envDocs, v)
		}
	}
	return docs, nil
}

// logf writes lm-eval's log line format.
func logf(w io.Writer, module, format string, args ...any) {
	fmt.Fprintf(w, "%s INFO     [%s] %s\n", time.Now().Format("2006-01-02:15:04:05"), module, fmt.Sprintf(format, args...))
}

// pyError prints an uncaught Python exception and returns code.
func pyError(w io.Writer, typ, msg string, code int) int {
	fmt.Fprintf(w, "Traceback (most recent call last):\n  File \"/usr/local/bin/lm_eval\", line 8, in <module>\n    sys.exit(cli_evaluate())\n             ^^^^^^^^^^^^^^\n%s: %s\n", typ, msg)
	return code
}
