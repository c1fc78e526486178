package workloads

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

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
			if !slices.Contains(percentileMetrics, name) {
				d.Errorf(v, "%s: %q is not a metric vllm bench serve reports (%s); it would be ignored silently", what, name, strings.Join(percentileMetrics, ", "))
				return false
			}
		}
		var missing []string
		for _, req := range requiredPercentileMetrics {
			if !slices.Contains(names, req) {
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
