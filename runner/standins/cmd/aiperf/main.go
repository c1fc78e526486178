// Command aiperf is a stand-in for `aiperf profile` (PyPI aiperf 0.13.0):
// it parses the flags the runner and recipes use, as aiperf's
// config/flags/cli_config.py names them, refuses any other, sends the
// requests to an OpenAI-compatible server, and writes
// profile_export_aiperf.json in aiperf's layout and JSON export schema
// (common/models/export_models.py, schema 1.4): one file for a run, one
// per point folder for a sweep, named as config/sweep/config.py's
// _format_dir_name names them.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/execlog"
)

func main() {
	execlog.Record()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

type kind int

const (
	value kind = iota
	boolean
	repeated
)

// flags are the options of `aiperf profile` the stand-in emulates, with
// aiperf's aliases; a real option not here is refused as not emulated.
var flags = map[string]kind{
	"--model": value, "--model-names": value, "-m": value,
	"--tokenizer": value, "--url": value, "-u": value,
	"--output-artifact-dir": value, "--artifact-dir": value,
	"--endpoint-type": value, "--streaming": boolean,
	"--extra-inputs": repeated, "--sweep-type": value,
	"--concurrency": value, "--request-count": value,
	"--synthetic-input-tokens-mean": value, "--output-tokens-mean": value,
	"--random-seed": value, "--num-prefix-prompts": value, "--prompt-prefix-length": value,
}

var canonical = map[string]string{"--model-names": "--model", "-m": "--model", "-u": "--url", "--artifact-dir": "--output-artifact-dir"}

type options struct {
	values map[string][]string
	bools  map[string]bool
}

func parse(args []string) (options, error) {
	o := options{values: map[string][]string{}, bools: map[string]bool{}}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		if strings.HasPrefix(name, "--no-") && flags["--"+strings.TrimPrefix(name, "--no-")] == boolean {
			o.bools["--"+strings.TrimPrefix(name, "--no-")] = false
			continue
		}
		k, ok := flags[name]
		if !ok {
			return o, fmt.Errorf("Unknown option: %q", a)
		}
		if c, ok := canonical[name]; ok {
			name = c
		}
		if k == boolean {
			o.bools[name] = true
			continue
		}
		if !hasVal {
			if i+1 >= len(args) || strings.HasPrefix(args[i+1], "--") {
				return o, fmt.Errorf("Parameter %q requires an argument", a)
			}
			i++
			val = args[i]
		}
		if k == value && len(o.values[name]) > 0 {
			return o, fmt.Errorf("Parameter %q given more than once", name)
		}
		o.values[name] = append(o.values[name], val)
	}
	return o, nil
}

func (o options) get(name string) string {
	if v := o.values[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// ints reads a positive int or a comma list of them, as aiperf's sweep
// parsing does.
func ints(name, s string, def int) ([]int, error) {
	if s == "" {
		return []int{def}, nil
	}
	var out []int
	for _, p := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("Invalid %s list: %q. Failed to parse value: %q. All values must be positive integers (>= 1).", name, s, p)
		}
		out = append(out, n)
	}
	return out, nil
}

type point struct{ concurrency, requests int }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "profile" {
		fmt.Fprintln(stderr, "fake aiperf: only `aiperf profile` is emulated")
		return 1
	}
	o, err := parse(args[1:])
	if err == nil {
		err = execute(ctx, o, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return 1
	}
	return 0
}

// execute runs `aiperf profile` with its options: one profile per point of
// the sweep, each exported as aiperf writes it.
func execute(ctx context.Context, o options, stdout io.Writer) error {
	t, err := readTarget(o)
	if err != nil {
		return err
	}
	sw, err := readSweep(o)
	if err != nil {
		return err
	}
	extra, err := extraInputs(o.values["--extra-inputs"])
	if err != nil {
		return err
	}
	outTokens, err := intOption(o, "--output-tokens-mean", 16)
	if err != nil {
		return err
	}
	inTokens, err := intOption(o, "--synthetic-input-tokens-mean", 16)
	if err != nil {
		return err
	}
	for _, p := range sw.points {
		dir := sw.dir(t.out, p)
		res := profile(ctx, t.base+t.endpoint, t.model, t.endpoint != "/v1/completions", o.bools["--streaming"], p, inTokens, outTokens, extra)
		if err := writeExport(dir, res, o.bools["--streaming"]); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "fake aiperf: concurrency %d, %d requests: %.2f req/s, %d errors -> %s\n", p.concurrency, p.requests, res.throughput, res.errors, dir)
	}
	return nil
}

// target is what a profile talks to and where it writes.
type target struct {
	model, base, endpoint, out string
}

// readTarget reads the model, the server's URL and endpoint, and the
// artifact directory, with aiperf's defaults.
func readTarget(o options) (target, error) {
	t := target{model: o.get("--model"), base: strings.TrimSuffix(o.get("--url"), "/"), out: o.get("--output-artifact-dir")}
	if t.model == "" {
		return target{}, fmt.Errorf("--model is required")
	}
	if t.base == "" {
		t.base = "http://localhost:8000"
	}
	if t.out == "" {
		t.out = "artifacts"
	}
	t.endpoint = "/v1/chat/completions"
	switch et := o.get("--endpoint-type"); et {
	case "", "chat":
	case "completions":
		t.endpoint = "/v1/completions"
	default:
		return target{}, fmt.Errorf("fake aiperf: --endpoint-type %s is not emulated", et)
	}
	return t, nil
}

// sweep is the points a profile runs: one, or a sweep over lists of
// concurrencies and request counts.
type sweep struct {
	conc, reqs []int
	points     []point
}

// readSweep reads --concurrency, --request-count and --sweep-type into
// the points to run, in aiperf's order.
func readSweep(o options) (sweep, error) {
	conc, err := ints("concurrency", o.get("--concurrency"), 1)
	if err != nil {
		return sweep{}, err
	}
	reqs, err := ints("request count", o.get("--request-count"), 10)
	if err != nil {
		return sweep{}, err
	}
	sw := sweep{conc: conc, reqs: reqs}
	switch st := o.get("--sweep-type"); {
	case st != "" && !sw.swept():
		return sweep{}, fmt.Errorf("--sweep-type %s needs a list in --concurrency or another sweepable option", st)
	case st == "zip":
		if len(conc) != len(reqs) && len(conc) > 1 && len(reqs) > 1 {
			return sweep{}, fmt.Errorf("--sweep-type zip needs lists of the same length, got %d and %d", len(conc), len(reqs))
		}
		for i := 0; i < max(len(conc), len(reqs)); i++ {
			sw.points = append(sw.points, point{conc[min(i, len(conc)-1)], reqs[min(i, len(reqs)-1)]})
		}
	case st == "" || st == "grid":
		for _, c := range conc {
			for _, r := range reqs {
				sw.points = append(sw.points, point{c, r})
			}
		}
	default:
		return sweep{}, fmt.Errorf("Invalid value for --sweep-type: %q; choose from grid, zip", st)
	}
	return sw, nil
}

// swept reports whether any option is a list, which makes a sweep.
func (sw sweep) swept() bool { return len(sw.conc) > 1 || len(sw.reqs) > 1 }

// dir is the point's folder under out, named as aiperf's
// config/sweep/config.py names it; a run that is no sweep writes to out.
func (sw sweep) dir(out string, p point) string {
	if !sw.swept() {
		return out
	}
	var parts []string
	if len(sw.conc) > 1 {
		parts = append(parts, fmt.Sprintf("concurrency_%d", p.concurrency))
	}
	if len(sw.reqs) > 1 {
		parts = append(parts, fmt.Sprintf("requests_%d", p.requests))
	}
	return filepath.Join(out, strings.Join(parts, "__"))
}

// extraInputs reads --extra-inputs name:value pairs; a value that is JSON
// is sent as what it decodes to, any other as a string.
func extraInputs(pairs []string) (map[string]any, error) {
	extra := map[string]any{}
	for _, kv := range pairs {
		k, v, ok := strings.Cut(kv, ":")
		if !ok || k == "" {
			return nil, fmt.Errorf("Invalid input format for --extra-inputs: %q. Expected input format: 'input_name:value'", kv)
		}
		var parsed any
		if json.Unmarshal([]byte(v), &parsed) != nil {
			parsed = v
		}
		extra[k] = parsed
	}
	return extra, nil
}

// intOption is the integer value of the option name, or def without one.
func intOption(o options, name string, def int) (int, error) {
	s := o.get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return n, nil
}

type sample struct {
	latency, ttft, itl float64 // ms
	tokens             int
}

type result struct {
	samples    []sample
	errors     int
	throughput float64
	tokRate    float64
	cancelled  bool
}

func profile(ctx context.Context, url, model string, chat, stream bool, p point, inTokens, outTokens int, extra map[string]any) result {
	jobs := make(chan int)
	var mu sync.Mutex
	var res result
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < p.concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				s, err := request(ctx, url, model, chat, stream, inTokens, outTokens, extra)
				mu.Lock()
				if err != nil {
					res.errors++
				} else {
					res.samples = append(res.samples, s)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < p.requests && ctx.Err() == nil; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	res.cancelled = ctx.Err() != nil
	secs := time.Since(start).Seconds()
	tokens := 0
	for _, s := range res.samples {
		tokens += s.tokens
	}
	res.throughput, res.tokRate = float64(len(res.samples))/secs, float64(tokens)/secs
	return res
}

func request(ctx context.Context, url, model string, chat, stream bool, inTokens, outTokens int, extra map[string]any) (sample, error) {
	prompt := strings.TrimSpace(strings.Repeat("hello ", inTokens))
	body := map[string]any{"model": model, "max_tokens": outTokens, "stream": stream}
	if chat {
		body["messages"] = []map[string]string{{"role": "user", "content": prompt}}
	} else {
		body["prompt"] = prompt
	}
	if stream {
		body["stream_options"] = map[string]bool{"include_usage": true}
	}
	for k, v := range extra {
		body[k] = v
	}
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(data))
	if err != nil {
		return sample{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return sample{}, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var s sample
	if !stream {
		var r struct {
			Usage struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
			return sample{}, err
		}
		s.tokens = r.Usage.CompletionTokens
		s.latency = ms(time.Since(t0))
		return s, nil
	}
	sc := bufio.NewScanner(resp.Body)
	var first time.Time
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []json.RawMessage `json:"choices"`
			Usage   *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			return sample{}, err
		}
		if len(chunk.Choices) > 0 && first.IsZero() {
			first = time.Now()
		}
		if chunk.Usage != nil {
			s.tokens = chunk.Usage.CompletionTokens
		}
	}
	if err := sc.Err(); err != nil {
		return sample{}, err
	}
	s.latency = ms(time.Since(t0))
	if !first.IsZero() {
		s.ttft = ms(first.Sub(t0))
	}
	if s.tokens > 1 {
		s.itl = (s.latency - s.ttft) / float64(s.tokens-1)
	}
	return s, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// stats is aiperf's JsonMetricResult for a record metric.
func stats(unit string, vals []float64) map[string]any {
	if len(vals) == 0 {
		return nil
	}
	sorted := append([]float64(nil), vals...)
	sort.Float64s(sorted)
	sum := 0.0
	for _, v := range sorted {
		sum += v
	}
	avg := sum / float64(len(sorted))
	variance := 0.0
	for _, v := range sorted {
		variance += (v - avg) * (v - avg)
	}
	pct := func(p float64) float64 {
		return sorted[int(math.Ceil(p/100*float64(len(sorted))))-1]
	}
	m := map[string]any{"unit": unit, "avg": avg, "min": sorted[0], "max": sorted[len(sorted)-1], "std": math.Sqrt(variance / float64(len(sorted))),
		"count": len(sorted), "sum": sum}
	for _, p := range []float64{1, 5, 10, 25, 50, 75, 90, 95, 99} {
		m["p"+strconv.Itoa(int(p))] = pct(p)
	}
	return m
}

func writeExport(dir string, r result, stream bool) error {
	var lat, ttft, itl, osl []float64
	for _, s := range r.samples {
		lat = append(lat, s.latency)
		ttft = append(ttft, s.ttft)
		itl = append(itl, s.itl)
		osl = append(osl, float64(s.tokens))
	}
	doc := map[string]any{
		"schema_version": "1.4", "aiperf_version": "0.13.0",
		"request_count": map[string]any{"unit": "requests", "avg": len(r.samples)},
		"was_cancelled": r.cancelled, "error_summary": []any{},
	}
	if len(r.samples) > 0 {
		doc["request_throughput"] = map[string]any{"unit": "requests/sec", "avg": r.throughput}
		doc["output_token_throughput"] = map[string]any{"unit": "tokens/sec", "avg": r.tokRate}
		doc["request_latency"] = stats("ms", lat)
		doc["output_sequence_length"] = stats("tokens", osl)
		if stream {
			doc["time_to_first_token"] = stats("ms", ttft)
			doc["inter_token_latency"] = stats("ms", itl)
		}
	}
	if r.errors > 0 {
		doc["error_request_count"] = map[string]any{"unit": "requests", "avg": r.errors}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "profile_export_aiperf.json"), data, 0o644)
}
