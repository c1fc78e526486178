package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/openai"
	"github.com/benchkite/benchkite/runner/internal/results"
)

// realDir holds one run of the real client (vLLM 0.33.0) against the
// stand-in server, recorded by its record.sh with the argv of argv.txt.
const realDir = "testdata/real-vllm-0.33.0"

// TestBenchMatchesRealClient runs the stand-in with the recorded run's
// argv against a stand-in server and compares its result file with the
// real client's: the same keys in the same order, the same JSON type for
// each, the same configuration values, the same relations between the
// numbers, the same summary lines; and the runner parses both alike.
func TestBenchMatchesRealClient(t *testing.T) {
	t.Parallel()
	realData, err := os.ReadFile(filepath.Join(realDir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}
	realText, err := os.ReadFile(filepath.Join(realDir, "bench.txt"))
	if err != nil {
		t.Fatal(err)
	}
	argvText, err := os.ReadFile(filepath.Join(realDir, "argv.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, openai.Config{Model: "benchkite/tiny-model"})
	dir := t.TempDir()
	argv := strings.Fields(strings.ReplaceAll(string(argvText), "{BASE_URL}", srv.URL()))
	argv = append(argv, "--tokenizer", "tiny-tokenizer", "--save-result", "--result-dir", dir, "--result-filename", "bench.json")
	code, stdout, stderr := runBenchCmd(t, argv...)
	if code != 0 {
		t.Fatalf("stand-in bench exit %d:\n%s", code, stderr)
	}
	fakeData, err := os.ReadFile(filepath.Join(dir, "bench.json"))
	if err != nil {
		t.Fatal(err)
	}

	if diff := cmp.Diff(orderedKeys(t, fakeData), orderedKeys(t, realData)); diff != "" {
		t.Errorf("keys and their order (-stand-in +real):\n%s", diff)
	}
	real, fake := decodeNumbers(t, realData), decodeNumbers(t, fakeData)
	if diff := cmp.Diff(jsonTypes(fake), jsonTypes(real)); diff != "" {
		t.Errorf("JSON types (-stand-in +real):\n%s", diff)
	}
	// What the run was asked for is written alike. The input tokens are
	// the server's count of each prompt (usage.prompt_tokens): the
	// stand-in server counts words, and the real client's prompts are
	// decoded from the tokenizer's ids, so the totals differ by design.
	for _, k := range []string{"endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate", "burstiness", "max_concurrency", "completed", "failed", "total_output_tokens", "request_goodput"} {
		if !cmp.Equal(fake[k], real[k]) {
			t.Errorf("%s: stand-in %v, real %v", k, fake[k], real[k])
		}
	}
	for name, m := range map[string]map[string]any{"real": real, "stand-in": fake} {
		for _, p := range relations(m) {
			t.Errorf("%s: %s", name, p)
		}
	}
	if diff := cmp.Diff(summaryLabels(stdout), summaryLabels(string(realText))); diff != "" {
		t.Errorf("summary lines (-stand-in +real):\n%s", diff)
	}

	// The runner reads both the same way.
	parsed := map[string]results.BenchResult{}
	for name, data := range map[string][]byte{"real": realData, "stand-in": fakeData} {
		b, err := results.ParseBench(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := b.Valid(32); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		parsed[name] = b
	}
	if diff := cmp.Diff(populated(parsed["stand-in"]), populated(parsed["real"])); diff != "" {
		t.Errorf("fields the runner read (-stand-in +real):\n%s", diff)
	}
}

func decodeNumbers(t *testing.T, data []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

// jsonTypes names each key's JSON type as Python wrote it: int and float
// apart, and the element types of lists.
func jsonTypes(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = jsonType(v)
	}
	return out
}

func jsonType(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "str"
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return "float"
		}
		return "int"
	case []any:
		kinds := map[string]bool{}
		for _, e := range v {
			kinds[jsonType(e)] = true
		}
		names := make([]string, 0, len(kinds))
		for k := range kinds {
			names = append(names, k)
		}
		sort.Strings(names)
		return "list[" + strings.Join(names, "|") + "]"
	case map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

func num(m map[string]any, k string) float64 {
	n, _ := m[k].(json.Number)
	f, err := n.Float64()
	if err != nil {
		return math.NaN()
	}
	return f
}

func nums(m map[string]any, k string) []float64 {
	l, _ := m[k].([]any)
	out := make([]float64, 0, len(l))
	for _, e := range l {
		n, _ := e.(json.Number)
		f, _ := n.Float64()
		out = append(out, f)
	}
	return out
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b)) }

// relations lists what serve.py's numbers must satisfy and do not.
func relations(m map[string]any) []string {
	var bad []string
	check := func(ok bool, format string, args ...any) {
		if !ok {
			bad = append(bad, fmt.Sprintf(format, args...))
		}
	}
	d := num(m, "duration")
	in, out, done := num(m, "total_input_tokens"), num(m, "total_output_tokens"), num(m, "completed")
	check(near(num(m, "request_throughput"), done/d), "request_throughput %v != completed/duration %v", num(m, "request_throughput"), done/d)
	check(near(num(m, "output_throughput"), out/d), "output_throughput != total_output_tokens/duration")
	check(near(num(m, "total_token_throughput"), (in+out)/d), "total_token_throughput != tokens/duration")
	check(out == 32*16, "total_output_tokens %v, want 32 prompts × 16 (--ignore-eos)", out)
	// serve.py counts the requests active in the busiest second.
	check(d >= 1 || num(m, "max_concurrent_requests") == done, "a run of %v s reports %v concurrent requests, not all %v", d, num(m, "max_concurrent_requests"), done)
	sum := func(xs []float64) (s float64) {
		for _, x := range xs {
			s += x
		}
		return s
	}
	if _, ok := m["input_lens"]; ok {
		check(sum(nums(m, "input_lens")) == in, "input_lens do not add up to total_input_tokens")
		check(sum(nums(m, "output_lens")) == out, "output_lens do not add up to total_output_tokens")
	}
	for _, k := range []string{"input_lens", "output_lens", "ttfts", "itls", "latencies", "start_times", "errors", "generated_texts"} {
		if l, ok := m[k].([]any); ok {
			check(float64(len(l)) == done, "%s has %d entries for %v requests", k, len(l), done)
		}
	}
	if lat := nums(m, "latencies"); len(lat) > 0 {
		mean := sum(lat) / float64(len(lat)) * 1000
		check(math.Abs(num(m, "mean_e2el_ms")-mean) < 1e-6*mean+1e-9, "mean_e2el_ms %v != mean of latencies %v", num(m, "mean_e2el_ms"), mean)
	}
	for _, metric := range []string{"ttft", "tpot", "itl", "e2el"} {
		mean, median, p99 := num(m, "mean_"+metric+"_ms"), num(m, "median_"+metric+"_ms"), num(m, "p99_"+metric+"_ms")
		check(mean > 0 && median > 0 && p99 >= median, "%s: mean %v, median %v, p99 %v", metric, mean, median, p99)
	}
	check(num(m, "mean_ttft_ms") <= num(m, "mean_e2el_ms"), "time to first token longer than the request")
	return bad
}

var summaryLine = regexp.MustCompile(`^(.{40}) \S`)

// summaryLabels returns the summary block's lines with the numbers cut:
// titles whole, rows up to their value column.
func summaryLabels(out string) []string {
	var labels []string
	in := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, " Serving Benchmark Result ") {
			in = true
		}
		if !in {
			continue
		}
		if strings.HasPrefix(line, "====") || strings.HasPrefix(line, "----") || strings.HasPrefix(line, "=") {
			labels = append(labels, line)
			continue
		}
		if m := summaryLine.FindStringSubmatch(line); m != nil {
			labels = append(labels, strings.TrimRight(m[1], " "))
		}
	}
	return labels
}

// populated names the typed fields the runner filled from a file.
func populated(b results.BenchResult) []string {
	var out []string
	add := func(name string, ok bool) {
		if ok {
			out = append(out, name)
		}
	}
	add("Date", b.Date != "")
	add("Backend", b.Backend != "")
	add("EndpointType", b.EndpointType != "")
	add("ModelID", b.ModelID != "")
	add("MaxConcurrency", b.MaxConcurrency != nil)
	add("Duration", b.Duration > 0)
	add("TTFT", b.TTFT.Mean > 0 && b.TTFT.P99 > 0)
	add("TPOT", b.TPOT.Mean > 0 && b.TPOT.P99 > 0)
	add("ITL", b.ITL.Mean > 0 && b.ITL.P99 > 0)
	add("E2EL", b.E2EL != nil)
	add("SpecDecode", b.SpecDecodeAcceptanceRate != nil)
	add("RequestRate=inf", math.IsInf(b.RequestRate, 1))
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range b.Numeric {
			if !yield(k) {
				return
			}
		}
	})
	return append(out, keys...)
}
