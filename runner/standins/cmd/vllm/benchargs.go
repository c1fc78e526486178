package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/runner/standins/argparse"
)

const benchProg = "vllm bench serve"

// benchParser declares every option of the real "vllm bench serve", so a
// command line the real tool accepts is accepted here and anything else is
// rejected the same way.
func benchParser() *argparse.Parser {
	p := argparse.New(benchProg)
	v, b, list, plus := argparse.Value, argparse.Bool, argparse.List, argparse.ListPlus
	for _, name := range []string{
		"--seed", "--num-prompts", "--dataset-name", "--dataset-path", "--custom-output-len",
		"--spec-bench-output-len", "--spec-bench-category", "--sonnet-input-len", "--sonnet-output-len",
		"--sonnet-prefix-len", "--sharegpt-output-len", "--blazedit-min-distance", "--blazedit-max-distance",
		"--asr-max-audio-len-sec", "--asr-min-audio-len-sec", "--random-input-len", "--random-output-len",
		"--random-range-ratio", "--random-prefix-len", "--random-batch-size", "--random-mm-base-items-per-request",
		"--random-mm-num-mm-items-range-ratio", "--random-mm-limit-mm-per-prompt", "--random-mm-bucket-config",
		"--hf-subset", "--hf-split", "--hf-name", "--hf-output-len", "--prefix-repetition-prefix-len",
		"--prefix-repetition-suffix-len", "--prefix-repetition-num-prefixes", "--prefix-repetition-output-len",
		"--speed-bench-dataset-subset", "--speed-bench-category", "--speed-bench-output-len",
		"--label", "--backend", "--base-url", "--host", "--port", "--endpoint", "--max-concurrency", "--model",
		"--input-len", "--output-len", "--tokenizer", "--tokenizer-mode", "--logprobs", "--request-rate",
		"--burstiness", "--probe-request-rate", "--num-warmups", "--result-dir", "--result-filename",
		"--percentile-metrics", "--metric-percentiles", "--request-id-prefix", "--top-p", "--top-k", "--min-p",
		"--temperature", "--frequency-penalty", "--presence-penalty", "--repetition-penalty",
		"--served-model-name", "--lora-assignment", "--ramp-up-strategy", "--ramp-up-start-rps",
		"--ramp-up-end-rps", "--ready-check-timeout-sec", "--chat-template-kwargs", "--extra-body",
		"--timeline-itl-thresholds",
	} {
		p.Add(v, name)
	}
	for _, name := range []string{
		"--no-stream", "--no-oversample", "--skip-chat-template", "--enable-multimodal-chat", "--disable-shuffle",
		"--no-reranker", "--use-beam-search", "--disable-tqdm", "--profile", "--save-result", "--save-detailed",
		"--append-result", "--ignore-eos", "--self-timed", "--no-self-timed", "--skip-tokenizer-init", "--insecure",
		"--plot-timeline", "--plot-dataset-stats", "--trust-remote-code",
	} {
		p.Add(b, name)
	}
	p.Add(list, "--header")
	p.Add(list, "--metadata")
	p.Add(plus, "--goodput")
	p.Add(plus, "--lora-modules")
	return p
}

// benchOptions is the parsed command line.
type benchOptions struct {
	backend, endpoint, baseURL, apiURL string
	model, servedModelName, tokenizer  string
	skipTokenizer                      bool
	label                              *string
	dataset, datasetPath               string
	numPrompts, seed                   int
	inputLen, outputLen, prefixLen     int
	rangeRatio                         float64
	requestRate, burstiness            float64
	maxConcurrency                     *int
	numWarmups, readyCheckTimeout      int
	ignoreEOS                          bool
	noStream                           bool // hf: load the dataset into the cache, not streamed
	hfSplit                            string
	hfOutputLen                        *int
	sampling                           map[string]any
	extraBody                          map[string]any
	headers                            map[string]string
	percentileMetrics                  []string
	percentiles                        []float64
	goodput                            map[string]float64
	save, saveDetailed, appendResult   bool
	resultDir, resultFilename          string
	metadata                           [][2]string
	requestIDPrefix                    string
}

// parseBenchArgs turns the command line into options, failing with an
// *argparse.Error for usage errors and a plain error for the ValueErrors
// vLLM raises after parsing.
func parseBenchArgs(args []string) (benchOptions, error) {
	r, err := benchParser().Parse(args)
	if err != nil {
		return benchOptions{}, err
	}
	// The typed options are read in the parser's order, so the first bad
	// value reported is the one argparse would report.
	rd := &optionReader{r: r}
	var o benchOptions
	readTarget(rd, &o)
	readLoad(rd, &o)
	readSampling(rd, &o)
	if err := joinFirst(rd.errs); err != nil {
		return benchOptions{}, err
	}
	if err := readReporting(r, &o); err != nil {
		return benchOptions{}, err
	}
	host, port := r.String("--host", "127.0.0.1"), r.String("--port", "8000")
	o.baseURL = r.String("--base-url", "http://"+joinHostPort(host, port))
	o.apiURL = o.baseURL + o.endpoint
	if err := checkBenchOptions(r, o); err != nil {
		return benchOptions{}, err
	}
	// vLLM forces ignore_eos for random datasets so every request runs to
	// the requested length.
	if o.dataset == "random" {
		o.ignoreEOS = true
	}
	return o, nil
}

// optionReader reads typed options, keeping every conversion error.
type optionReader struct {
	r    *argparse.Result
	errs []error
}

func (rd *optionReader) int(name string, def int) int {
	n, err := rd.r.Int(name, def)
	rd.errs = append(rd.errs, err)
	return n
}

func (rd *optionReader) float(name string, def float64) float64 {
	f, err := rd.r.Float(name, def)
	rd.errs = append(rd.errs, err)
	return f
}

func (rd *optionReader) choice(name, def string, choices ...string) string {
	c, err := rd.r.Choice(name, def, choices...)
	rd.errs = append(rd.errs, err)
	return c
}

// readTarget reads what the run talks to and what it sends: the backend,
// the dataset, the model and the tokenizer.
func readTarget(rd *optionReader, o *benchOptions) {
	r := rd.r
	o.backend = rd.choice("--backend", "openai", "openai", "vllm", "openai-chat")
	o.dataset = rd.choice("--dataset-name", "random", "sharegpt", "burstgpt", "sonnet", "random", "random-mm",
		"random-rerank", "hf", "custom", "custom_mm", "prefix_repetition", "spec_bench", "speed_bench")
	o.datasetPath = r.String("--dataset-path", "")
	o.endpoint = r.String("--endpoint", "/v1/completions")
	o.model = r.String("--model", "")
	o.servedModelName = r.String("--served-model-name", "")
	o.tokenizer = r.String("--tokenizer", "")
	o.skipTokenizer = r.Bool("--skip-tokenizer-init")
	if r.Has("--label") {
		l := r.String("--label", "")
		o.label = &l
	}
}

// readLoad reads the load: how many prompts of what lengths, at what rate
// and concurrency, after what warm-up, and where the result goes.
func readLoad(rd *optionReader, o *benchOptions) {
	r := rd.r
	o.numPrompts = rd.int("--num-prompts", 1000)
	o.seed = rd.int("--seed", 0)
	o.inputLen = rd.int("--random-input-len", 1024)
	o.outputLen = rd.int("--random-output-len", 128)
	o.prefixLen = rd.int("--random-prefix-len", 0)
	o.rangeRatio = rd.float("--random-range-ratio", 0)
	if r.Has("--input-len") {
		o.inputLen = rd.int("--input-len", 0)
	}
	if r.Has("--output-len") {
		o.outputLen = rd.int("--output-len", 0)
	}
	o.requestRate = rd.float("--request-rate", math.Inf(1))
	o.burstiness = rd.float("--burstiness", 1)
	if r.Has("--max-concurrency") {
		n := rd.int("--max-concurrency", 0)
		o.maxConcurrency = &n
	}
	o.numWarmups = rd.int("--num-warmups", 0)
	o.readyCheckTimeout = rd.int("--ready-check-timeout-sec", 0)
	o.ignoreEOS = r.Bool("--ignore-eos")
	o.noStream = r.Bool("--no-stream")
	o.hfSplit = r.String("--hf-split", "")
	if r.Has("--hf-output-len") {
		n := rd.int("--hf-output-len", 0)
		o.hfOutputLen = &n
	}
	o.save, o.saveDetailed, o.appendResult = r.Bool("--save-result"), r.Bool("--save-detailed"), r.Bool("--append-result")
	o.resultDir, o.resultFilename = r.String("--result-dir", ""), r.String("--result-filename", "")
	o.requestIDPrefix = r.String("--request-id-prefix", "bench-fake0000-")
}

// readSampling reads the sampling options given and --extra-body.
func readSampling(rd *optionReader, o *benchOptions) {
	r := rd.r
	o.sampling = map[string]any{}
	for _, s := range []struct{ flag, key string }{
		{"--top-p", "top_p"}, {"--min-p", "min_p"}, {"--temperature", "temperature"},
		{"--frequency-penalty", "frequency_penalty"}, {"--presence-penalty", "presence_penalty"},
		{"--repetition-penalty", "repetition_penalty"},
	} {
		if r.Has(s.flag) {
			o.sampling[s.key] = rd.float(s.flag, 0)
		}
	}
	if r.Has("--top-k") {
		o.sampling["top_k"] = rd.int("--top-k", 0)
	}
	if raw := r.String("--extra-body", ""); raw != "" {
		if err := json.Unmarshal([]byte(raw), &o.extraBody); err != nil {
			rd.errs = append(rd.errs, &argparse.Error{Prog: benchProg, Msg: fmt.Sprintf("argument --extra-body: invalid loads value: '%s'", raw)})
		}
	}
}

// readReporting reads the options vLLM converts after parsing: the
// percentiles, goodput objectives, metadata and headers.
func readReporting(r *argparse.Result, o *benchOptions) error {
	metrics := r.String("--percentile-metrics", "ttft,tpot,itl")
	o.percentileMetrics = strings.Split(metrics, ",")
	for _, p := range strings.Split(r.String("--metric-percentiles", "99"), ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return fmt.Errorf("could not convert string to float: '%s'", p)
		}
		o.percentiles = append(o.percentiles, f)
	}
	var err error
	if o.goodput, err = parseGoodput(r.Strings("--goodput")); err != nil {
		return err
	}
	for _, kv := range r.Strings("--metadata") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("Invalid metadata format. Please use KEY=VALUE format.")
		}
		o.metadata = append(o.metadata, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
	}
	o.headers = map[string]string{}
	for _, kv := range r.Strings("--header") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return fmt.Errorf("Invalid header format. Please use KEY=VALUE format.")
		}
		o.headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return nil
}

// checkBenchOptions refuses what vLLM refuses after parsing and what the
// stand-in does not emulate.
func checkBenchOptions(r *argparse.Result, o benchOptions) error {
	switch {
	case o.maxConcurrency != nil && *o.maxConcurrency <= 0:
		return fmt.Errorf("--max-concurrency must be greater than 0")
	case r.Has("--ramp-up-strategy"):
		return fmt.Errorf("--ramp-up-strategy is not supported by this stand-in")
	case (o.dataset == "random" || o.dataset == "random-mm") && o.datasetPath != "":
		return fmt.Errorf("Cannot use '%s' dataset with --dataset-path. Please specify the appropriate --dataset-name (e.g., 'sharegpt', 'custom', 'sonnet') for your dataset file: %s", o.dataset, o.datasetPath)
	case o.dataset == "hf" && o.datasetPath == "":
		return fmt.Errorf("--dataset-path is required for the hf dataset")
	case o.dataset == "hf" && textDatasets[o.datasetPath].defaultOutputLen == 0:
		return fmt.Errorf("Unsupported dataset path: %s (this stand-in knows %s)", o.datasetPath, strings.Join(textDatasetPaths(), ", "))
	case o.dataset != "random" && o.dataset != "hf":
		return fmt.Errorf("dataset %q is not available in this stand-in; use random or hf", o.dataset)
	case o.backend == "openai-chat" && !strings.HasSuffix(o.apiURL, "chat/completions"):
		return fmt.Errorf("OpenAI Chat Completions API URL must end with 'chat/completions'.")
	case o.backend != "openai-chat" && !strings.HasSuffix(o.apiURL, "completions"):
		return fmt.Errorf("OpenAI Completions API URL must end with 'completions' or 'profile'.")
	case o.numPrompts <= 0:
		return fmt.Errorf("--num-prompts must be positive in this stand-in, got %d", o.numPrompts)
	case o.rangeRatio < 0 || o.rangeRatio >= 1:
		return fmt.Errorf("random_range_ratio must be in [0, 1).")
	}
	return nil
}

func parseGoodput(pairs []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, pair := range pairs {
		name, val, ok := strings.Cut(pair, ":")
		f, err := strconv.ParseFloat(val, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("Invalid format found for service level objectives. Specify service level objectives for goodput as \"KEY:VALUE\" pairs, where the key is a metric name, and the value is a number in milliseconds.")
		}
		if name != "ttft" && name != "tpot" && name != "e2el" {
			return nil, fmt.Errorf("Invalid metric name found, %s: %s. The service level objective name should be one of ['ttft', 'tpot', 'e2el']. ", name, val)
		}
		out[name] = f
	}
	return out, nil
}

func joinHostPort(host, port string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}

func joinFirst(errs []error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
