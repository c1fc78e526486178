package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/pyjson"
	"github.com/benchkite/benchkite/runner/standins/argparse"
)

// requestTimeout is vLLM's per-request timeout in the benchmark.
const requestTimeout = 6 * time.Hour

// runBench imitates "vllm bench serve": it really drives the server at
// --base-url and reports what it measured.
func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := parseBenchArgs(args)
	if err != nil {
		var usage *argparse.Error
		if errors.As(err, &usage) {
			usage.Print(stderr)
			return 2
		}
		return pyError(stderr, "ValueError", err.Error())
	}
	fmt.Fprintf(stdout, "Namespace(subparser='bench', bench_type='serve', backend='%s', base_url='%s', endpoint='%s', model=%s, dataset_name='%s', num_prompts=%d, max_concurrency=%s, request_rate=%s, seed=%d)\n",
		o.backend, o.baseURL, o.endpoint, pyStrOrNone(o.model), o.dataset, o.numPrompts, pyIntOrNone(o.maxConcurrency), pyFloatStr(o.requestRate), o.seed)

	maxConns := 0
	if o.maxConcurrency != nil {
		maxConns = *o.maxConcurrency
	}
	httpClient := newHTTPClient(maxConns, requestTimeout)
	defer httpClient.CloseIdleConnections()

	modelName, modelID, err := resolveModel(ctx, httpClient, o, stdout)
	if err != nil {
		return pyError(stderr, "RuntimeError", err.Error())
	}
	samples, err := loadSamples(o, getenv)
	if err != nil {
		return pyError(stderr, "ConnectionError", err.Error())
	}
	if _, ok := o.sampling["temperature"]; !ok {
		fmt.Fprintln(stdout, "WARNING: vllm bench serve no longer sets temperature==0 (greedy) in requests by default. The default will be determined on the server side and can be model/API specific. For the old behavior, include --temperature=0.")
	}

	base := time.Now()
	client := &benchClient{
		http: httpClient, apiURL: o.apiURL, chat: o.backend == "openai-chat",
		model: orDefault(modelName, modelID), ignoreEOS: o.ignoreEOS, extra: requestExtras(o), headers: o.headers,
		clock: func() float64 { return time.Since(base).Seconds() + 1000 },
	}
	result, err := benchmark(ctx, o, client, samples, o.skipTokenizer, stdout)
	if err != nil {
		return pyError(stderr, "ValueError", err.Error())
	}
	if ctx.Err() != nil {
		fmt.Fprintln(stderr, "KeyboardInterrupt")
		return 130
	}
	now := time.Now().Format("20060102-150405")
	return writeOutcome(o, modelID, now, resultFile(o, modelID, now, result), getenv, stderr)
}

// loadSamples are the requests of the run: the hf dataset's (fetched
// first when it must be) or random ones.
func loadSamples(o benchOptions, getenv func(string) string) ([]sampleRequest, error) {
	if o.dataset != "hf" {
		return randomSamples(o), nil
	}
	if err := loadTextDataset(o, getenv); err != nil {
		return nil, err
	}
	return textSamples(o), nil
}

// requestExtras are the fields every request carries beyond the prompt:
// the sampling options, then --extra-body.
func requestExtras(o benchOptions) map[string]any {
	extra := map[string]any{}
	for k, v := range o.sampling {
		extra[k] = v
	}
	for k, v := range o.extraBody {
		extra[k] = v
	}
	return extra
}

// resultFile is the result file's object: what the run was asked for,
// the --metadata pairs, then benchmark's result, with the per-request
// lists only under --save-detailed.
func resultFile(o benchOptions, modelID, now string, result *pyjson.Object) *pyjson.Object {
	tokenizerID := any(nil)
	if !o.skipTokenizer {
		tokenizerID = orDefault(o.tokenizer, modelID)
	}
	out := pyjson.NewObject().
		Set("date", now).
		Set("endpoint_type", o.backend).
		Set("backend", o.backend).
		Set("label", o.label).
		Set("model_id", modelID).
		Set("tokenizer_id", tokenizerID).
		Set("num_prompts", o.numPrompts)
	for _, kv := range o.metadata {
		out.Set(kv[0], kv[1])
	}
	if math.IsInf(o.requestRate, 1) {
		out.Set("request_rate", "inf")
	} else {
		out.Set("request_rate", o.requestRate)
	}
	out.Set("burstiness", o.burstiness).Set("max_concurrency", o.maxConcurrency)
	for _, key := range result.Keys() {
		v, _ := result.Get(key)
		out.Set(key, v)
	}
	if !o.saveDetailed {
		for _, key := range []string{"input_lens", "output_lens", "start_times", "ttfts", "itls", "generated_texts", "errors"} {
			out.Delete(key)
		}
	}
	return out
}

// writeOutcome saves the result file when asked to (and the
// FAKE_VLLM_BENCH_NO_OUTPUT knob allows), then kills the server the
// FAKE_VLLM_BENCH_KILL_PIDFILE knob names; it returns the exit status.
func writeOutcome(o benchOptions, modelID, now string, out *pyjson.Object, getenv func(string) string, stderr io.Writer) int {
	if (o.save || o.appendResult) && getenv(envBenchNoOutput) != "true" {
		if err := saveResult(o, modelID, now, out); err != nil {
			return pyError(stderr, "OSError", err.Error())
		}
	}
	if f := getenv(envBenchKillPidFile); f != "" {
		if err := killFromPidFile(f); err != nil {
			return pyError(stderr, "RuntimeError", err.Error())
		}
	}
	return 0
}

// resolveModel checks the server is reachable (the stand-in fails fast
// where vLLM would go on to fail every request) and, without --model,
// takes the first served model like vLLM does.
func resolveModel(ctx context.Context, client *http.Client, o benchOptions, stdout io.Writer) (name, id string, err error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	url := o.baseURL + "/v1/models"
	if o.model == "" {
		fmt.Fprintln(stdout, "Model not specified, fetching first model from server...")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", "", fmt.Errorf("Failed to fetch models from server at %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", "", fmt.Errorf("Failed to fetch models from server at %s. Check that:\n1. The server is running\n2. The server URL is correct\nError: %s", url, strings.TrimSpace(pythonishError(err)))
	}
	defer resp.Body.Close()
	var models struct {
		Data []struct {
			ID   string `json:"id"`
			Root string `json:"root"`
		} `json:"data"`
	}
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("Failed to fetch models from server at %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&models); err != nil {
		return "", "", fmt.Errorf("Failed to fetch models from server at %s: %w", url, err)
	}
	if o.model != "" {
		return o.servedModelName, o.model, nil
	}
	if len(models.Data) == 0 {
		return "", "", fmt.Errorf("No models found on the server at %s. Make sure the server is running and has models loaded.", o.baseURL)
	}
	fmt.Fprintf(stdout, "First model name: %s, first model id: %s\n", models.Data[0].ID, models.Data[0].Root)
	return models.Data[0].ID, models.Data[0].Root, nil
}

// benchmark runs warm-ups and the measured requests, prints the summary and
// returns the result keys serve.py's benchmark() returns, in its order.
func benchmark(ctx context.Context, o benchOptions, c *benchClient, samples []sampleRequest, noTokenizer bool, stdout io.Writer) (*pyjson.Object, error) {
	limit := len(samples)
	if o.maxConcurrency != nil {
		limit = *o.maxConcurrency
	}
	sem := make(chan struct{}, limit)
	if err := warmUp(ctx, o, c, samples[0], sem, stdout); err != nil {
		return nil, err
	}
	printTraffic(stdout, o)

	before := fetchSpecDecode(ctx, c.http, o.baseURL)
	outs, duration := sendAll(ctx, o, c, samples, sem)
	spec := specDelta(before, fetchSpecDecode(ctx, c.http, o.baseURL))

	m := calculateMetrics(outs, duration, o.percentiles, o.goodput)
	printFailures(stdout, outs)
	fmt.Fprintln(stdout, "tip: install termplotlib and gnuplot to plot the metrics")

	rep := &report{w: stdout, o: o}
	rep.header(m, duration, noTokenizer)
	res := benchResult(o, m, duration, outs, spec)
	rep.latencies(res, m, outs, noTokenizer)
	rep.spec(spec)
	fmt.Fprintln(stdout, strings.Repeat("=", 50))
	return res, nil
}

// warmUp makes the initial test run (waiting up to --ready-check-timeout-sec
// for the server) and sends the --num-warmups requests, all of the test
// prompt.
func warmUp(ctx context.Context, o benchOptions, c *benchClient, test sampleRequest, sem chan struct{}, stdout io.Writer) error {
	fmt.Fprintln(stdout, "Starting initial single prompt test run...")
	if o.readyCheckTimeout > 0 {
		if err := waitReady(ctx, c, test, time.Duration(o.readyCheckTimeout)*time.Second); err != nil {
			return err
		}
		fmt.Fprintln(stdout, "Initial test run completed.")
	} else {
		fmt.Fprintln(stdout, "Skipping endpoint ready check.")
	}
	if o.numWarmups <= 0 {
		return nil
	}
	fmt.Fprintf(stdout, "Warming up with %d requests...\n", o.numWarmups)
	var wg sync.WaitGroup
	for i := range o.numWarmups {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			c.send(ctx, test, fmt.Sprintf("%swarmup-%d", o.requestIDPrefix, i))
		})
	}
	wg.Wait()
	fmt.Fprintln(stdout, "Warmup run completed.")
	return nil
}

// printTraffic announces the main run and its traffic shape.
func printTraffic(stdout io.Writer, o benchOptions) {
	fmt.Fprintln(stdout, "Starting main benchmark run...")
	distribution := "Poisson process"
	if o.burstiness != 1 {
		distribution = "Gamma distribution"
	}
	fmt.Fprintf(stdout, "Traffic request rate: %s\nBurstiness factor: %s (%s)\nMaximum request concurrency: %s\n",
		pyFloatStr(o.requestRate), pyFloatStr(o.burstiness), distribution, pyIntOrNone(o.maxConcurrency))
}

// sendAll sends the samples at their arrival times, at most sem's capacity
// at once, and returns each one's outcome and the run's duration in
// seconds. A cancelled context stops further arrivals.
func sendAll(ctx context.Context, o benchOptions, c *benchClient, samples []sampleRequest, sem chan struct{}) ([]requestOutput, float64) {
	outs := make([]requestOutput, len(samples))
	delays := arrivalDelays(len(samples), o.requestRate, o.burstiness, o.seed)
	start := time.Now()
	startClock := c.clock()
	var wg sync.WaitGroup
	for i, s := range samples {
		if wait := time.Until(start.Add(delays[i])); wait > 0 {
			if sleepCtx(ctx, wait) != nil {
				break
			}
		}
		arrival := c.clock()
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out := c.send(ctx, s, fmt.Sprintf("%s%d", o.requestIDPrefix, i))
			out.queueTime = out.startTime - arrival
			outs[i] = out
		})
	}
	wg.Wait()
	return outs, c.clock() - startClock
}

// printFailures lists the errors of the first ten failed requests.
func printFailures(stdout io.Writer, outs []requestOutput) {
	var failed []requestOutput
	for _, out := range outs {
		if !out.success {
			failed = append(failed, out)
		}
	}
	if len(failed) == 0 {
		return
	}
	fmt.Fprintln(stdout, "Failed requests during benchmark run detected (capping to 10):")
	for i, f := range failed[:min(len(failed), 10)] {
		fmt.Fprintf(stdout, "Error %d: %s\n", i, f.err)
	}
}

// benchResult is benchmark()'s result before the latency summaries: the
// totals and throughputs, the per-request lists and the speculative
// decoding counts.
func benchResult(o benchOptions, m benchMetrics, duration float64, outs []requestOutput, spec *specStats) *pyjson.Object {
	res := pyjson.NewObject().
		Set("duration", duration).
		Set("completed", m.completed).
		Set("failed", m.failed).
		Set("total_input_tokens", m.totalInput).
		Set("total_output_tokens", m.totalOutput).
		Set("request_throughput", m.requestThroughput)
	if len(o.goodput) > 0 {
		res.Set("request_goodput", m.requestGoodput)
	} else {
		res.Set("request_goodput", nil)
	}
	res.Set("output_throughput", m.outputThroughput).
		Set("total_token_throughput", m.totalTokenThroughput)
	setPerRequest(res, m, outs)
	res.Set("max_output_tokens_per_s", m.maxOutputTokensPerSecond).
		Set("max_concurrent_requests", m.maxConcurrentRequests).
		Set("rtfx", 0.0)
	if spec != nil {
		res.Set("spec_decode_acceptance_rate", spec.acceptanceRate).
			Set("spec_decode_acceptance_length", spec.acceptanceLength).
			Set("spec_decode_num_drafts", spec.drafts).
			Set("spec_decode_draft_tokens", spec.draftTokens).
			Set("spec_decode_accepted_tokens", spec.accepted).
			Set("spec_decode_per_position_acceptance_rates", spec.perPosition)
	}
	return res
}

// setPerRequest sets the lists of one value per request, in serve.py's
// order.
func setPerRequest(res *pyjson.Object, m benchMetrics, outs []requestOutput) {
	var inputLens, outputLens []int
	var ttfts, latencies, startTimes, queueTimes []float64
	var itls [][]float64
	var texts, errs []string
	for i, out := range outs {
		inputLens = append(inputLens, out.promptLen)
		outputLens = append(outputLens, m.outputLens[i])
		ttfts = append(ttfts, out.ttft)
		itls = append(itls, append([]float64{}, out.itl...))
		latencies = append(latencies, out.latency)
		startTimes = append(startTimes, out.startTime)
		queueTimes = append(queueTimes, out.queueTime)
		texts = append(texts, out.generatedText)
		errs = append(errs, out.err)
	}
	res.Set("input_lens", inputLens).Set("output_lens", outputLens).Set("ttfts", ttfts).Set("itls", itls).
		Set("latencies", latencies).Set("start_times", startTimes).Set("queue_times", queueTimes).
		Set("generated_texts", texts).Set("errors", errs)
}

// latencies prints and records the latency summaries: the token latencies
// when there is a tokenizer, end to end, and under --max-concurrency the
// client's queueing.
func (r *report) latencies(res *pyjson.Object, m benchMetrics, outs []requestOutput, noTokenizer bool) {
	if !noTokenizer {
		r.metric(res, "ttft", "TTFT", "Time to First Token", m.ttft)
		r.metric(res, "tpot", "TPOT", "Time per Output Token (excl. 1st token)", m.tpot)
		r.metric(res, "itl", "ITL", "Inter-token Latency", m.itl)
	}
	r.metric(res, "e2el", "E2EL", "End-to-end Latency", m.e2el)
	if r.o.maxConcurrency == nil {
		return
	}
	var queued, inclQueue []float64
	for _, out := range outs {
		if out.success {
			queued = append(queued, out.queueTime)
			inclQueue = append(inclQueue, out.latency+out.queueTime)
		}
	}
	r.metric(res, "client_queue_time", "Client Queue Time", "Client-side Queueing", summarize(queued, r.o.percentiles))
	if !math.IsInf(r.o.requestRate, 1) {
		r.metric(res, "e2el_including_client_queue", "E2EL incl. Client Queue", "Queue-inclusive End-to-end Latency", summarize(inclQueue, r.o.percentiles))
	}
}

// arrivalDelays schedules requests like serve.py's get_request: all at once
// for an infinite rate, otherwise gamma-distributed gaps (exponential at
// burstiness 1) rescaled so the last request arrives at n/rate.
func arrivalDelays(n int, rate, burstiness float64, seed int) []time.Duration {
	out := make([]time.Duration, n)
	if math.IsInf(rate, 1) {
		return out
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0xa771))
	theta := 1 / (rate * burstiness)
	cum := make([]float64, n)
	total := 0.0
	for i := range cum {
		total += gamma(rng, burstiness) * theta
		cum[i] = total
	}
	scale := 1.0
	if total > 0 {
		scale = float64(n) / rate / total
	}
	for i, c := range cum {
		out[i] = time.Duration(c * scale * float64(time.Second))
	}
	return out
}

// gamma draws from Gamma(shape, 1) with Marsaglia and Tsang's method.
func gamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return gamma(rng, shape+1) * math.Pow(rng.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// waitReady sends the test request every 5 s until it succeeds, like
// --ready-check-timeout-sec.
func waitReady(ctx context.Context, c *benchClient, test sampleRequest, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		out := c.send(ctx, test, "ready-check")
		if out.success {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("Initial test run failed - Please make sure benchmark arguments are correctly specified. Error: %s", out.err)
		}
		if sleepCtx(ctx, min(5*time.Second, time.Until(deadline))) != nil {
			return ctx.Err()
		}
	}
}

// saveResult writes the result as json.dump does (one line), appending
// with a newline separator under --append-result.
func saveResult(o benchOptions, modelID, now string, result *pyjson.Object) error {
	name := o.resultFilename
	if name == "" {
		label := o.backend
		if o.label != nil && *o.label != "" {
			label = *o.label
		}
		conc := ""
		if o.maxConcurrency != nil {
			conc = fmt.Sprintf("-concurrency%d", *o.maxConcurrency)
		}
		parts := strings.Split(modelID, "/")
		name = fmt.Sprintf("%s-%sqps%s-%s-%s.json", label, pyFloatStr(o.requestRate), conc, parts[len(parts)-1], now)
	}
	if o.resultDir != "" {
		if err := os.MkdirAll(o.resultDir, 0o755); err != nil {
			return fmt.Errorf("create result dir: %w", err)
		}
		name = filepath.Join(o.resultDir, name)
	}
	data, err := pyjson.Marshal(result, pyjson.Options{EnsureASCII: true})
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if o.appendResult {
		flags = os.O_RDWR | os.O_CREATE | os.O_APPEND
	}
	f, err := os.OpenFile(name, flags, 0o644)
	if err != nil {
		return fmt.Errorf("open result file: %w", err)
	}
	if o.appendResult {
		if st, err := f.Stat(); err == nil && st.Size() > 0 {
			data = append([]byte("\n"), data...)
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write result file: %w", err)
	}
	return f.Close()
}

func pyError(w io.Writer, typ, msg string) int { return pyErrorCode(w, typ, msg, 1) }

// pyErrorCode prints an uncaught Python exception and returns code.
func pyErrorCode(w io.Writer, typ, msg string, code int) int {
	fmt.Fprintf(w, "Traceback (most recent call last):\n  File \"/usr/local/bin/vllm\", line 10, in <module>\n    sys.exit(main())\n             ^^^^^^\n%s: %s\n", typ, msg)
	return code
}

func pyStrOrNone(s string) string {
	if s == "" {
		return "None"
	}
	return "'" + s + "'"
}

func pyIntOrNone(n *int) string {
	if n == nil {
		return "None"
	}
	return fmt.Sprint(*n)
}

// pyFloatStr is Python's str(float), e.g. "inf" or "10.0".
func pyFloatStr(f float64) string {
	if math.IsInf(f, 1) {
		return "inf"
	}
	return pyjson.FormatFloat(f)
}

func countWords(s string) int { return len(strings.Fields(s)) }
