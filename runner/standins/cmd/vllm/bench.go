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
