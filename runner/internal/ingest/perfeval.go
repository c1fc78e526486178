package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// The perf-eval sink speaks to the dashboards of the system benchkite
// replaces as that system does (its lib/ingest_perf.py and lib/ingest.py):
// a bench run is one row object POSTed to the perf endpoint, an accuracy
// result one results object, and lm_eval's logged samples go in batches
// to the eval endpoint. A team that switches keeps its dashboard's rows.
const (
	// PerfEvalPerfURL and PerfEvalEvalURL are its endpoints by default;
	// PERF_INGEST_URL and INGEST_URL override them, as there.
	PerfEvalPerfURL = "https://vllm-perf-data-ingest-224810116257.us-central1.run.app/"
	PerfEvalEvalURL = "https://vllm-eval-data-ingest-224810116257.us-central1.run.app/"
	// PerfEvalTokenName is the bearer token's variable and Buildkite
	// secret there.
	PerfEvalTokenName = "INGEST_BEARER_TOKEN"
	// SamplesBatchBytes bounds one samples POST: the table behind the
	// eval endpoint refuses records over 10 MiB.
	SamplesBatchBytes = 4 << 20
	// perfEvalDate is the dashboard's date format, UTC.
	perfEvalDate = "2006-01-02 15:04:05"
)

// buildkiteFields are the job variables every eval payload carries, by
// their lower-case names.
var buildkiteFields = []string{
	"BUILDKITE_BUILD_ID", "BUILDKITE_BUILD_NUMBER", "BUILDKITE_BUILD_URL",
	"BUILDKITE_BRANCH", "BUILDKITE_COMMIT", "BUILDKITE_PIPELINE_SLUG",
}

// PerfEvalSink posts a run's results in perf-eval's shape.
type PerfEvalSink struct {
	PerfURL, EvalURL, Token string
	Client                  *http.Client
	// Dir is the run's results directory; TaskResult.File is relative to
	// it, and source_file names files under it.
	Dir string
	// Getenv reads the job's BUILDKITE_* variables and NIGHTLY.
	Getenv func(string) string
	// NoSamples leaves lm_eval's samples out (INGEST_NO_SAMPLES there).
	NoSamples bool
}

// nightly says whether the build marks its rows as the nightly schedule's
// (NIGHTLY=1, which the generator sets on scheduled builds).
func (k *PerfEvalSink) nightly() bool { return k.Getenv != nil && k.Getenv("NIGHTLY") == "1" }

// PerfRows are the perf endpoint's rows of s, one per bench run that
// measured something: the dashboard's fields, every *_ms key of the
// result in seconds without the suffix, and each TPOT's interactivity
// (1000 / TPOT in ms, tokens per second per user).
func PerfRows(s summary.Summary, nightly bool) []map[string]any {
	tp := max(s.TP, 1) * max(s.DP, 1) // the effective parallel degree
	date := s.Finished.UTC()
	if s.Finished.IsZero() {
		date = time.Now().UTC()
	}
	spec := "false"
	for _, r := range s.Bench {
		if r.SpecDecode != nil {
			spec = "true"
		}
	}
	var rows []map[string]any
	for _, r := range s.Bench {
		if r.Status != summary.StatusOK {
			continue
		}
		row := map[string]any{
			"date":                date.Format(perfEvalDate),
			"device":              s.Device,
			"conc":                r.Concurrency,
			"image":               s.Image,
			"model":               s.Model,
			"framework":           "vllm",
			"precision":           s.Precision,
			"spec_decoding":       spec,
			"disagg":              "false",
			"isl":                 r.InputLen,
			"osl":                 r.OutputLen,
			"is_multinode":        "false",
			"tp":                  tp,
			"ep":                  1,
			"dp_attention":        "false",
			"tput_per_gpu":        r.TotalTokenThroughput / float64(tp),
			"output_tput_per_gpu": r.OutputThroughput / float64(tp),
			"input_tput_per_gpu":  (r.TotalTokenThroughput - r.OutputThroughput) / float64(tp),
		}
		if nightly {
			row["nightly"] = true
		}
		for key, v := range r.Metrics {
			name, ok := strings.CutSuffix(key, "_ms")
			if !ok {
				continue
			}
			row[name] = v / 1000
			if strings.Contains(key, "tpot") {
				intvty := 0.0
				if v != 0 {
					intvty = 1000 / v
				}
				row[strings.ReplaceAll(name, "tpot", "intvty")] = intvty
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// evalMeta is what every eval payload of one task carries.
func (k *PerfEvalSink) evalMeta(s summary.Summary, task string) map[string]any {
	md := map[string]any{"workload": s.Recipe, "task": task}
	for _, name := range buildkiteFields {
		if k.Getenv != nil {
			if v := k.Getenv(name); v != "" {
				md[strings.ToLower(name)] = v
			}
		}
	}
	if s.Image != "" {
		md["image"] = s.Image
	}
	if s.VLLMCommit != "" {
		md["vllm_commit"] = s.VLLMCommit
	}
	if k.nightly() {
		md["nightly"] = true
	}
	return md
}

// with is md and more, in one new map.
func with(md map[string]any, more map[string]any) map[string]any {
	out := make(map[string]any, len(md)+len(more))
	for k, v := range md {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// bfclResults is a BFCL category's score as the lm_eval-shaped results
// file perf-eval writes for it.
func bfclResults(s summary.Summary, t summary.TaskResult) map[string]any {
	acc := t.Metrics[workloads.BFCLMetric]
	return map[string]any{
		"results":  map[string]any{t.Task: map[string]any{"acc,none": acc, "acc_stderr,none": 0.0, "alias": t.Task}},
		"configs":  map[string]any{t.Task: map[string]any{"task": t.Task, "num_fewshot": 0}},
		"versions": map[string]any{t.Task: 1},
		"n-shot":   map[string]any{t.Task: 0},
		"config":   map[string]any{"model": "local-completions", "model_args": "model=" + s.Model},
	}
}

// Post sends every row and payload of s. It is best effort: every post is
// tried, and the errors come back joined for the caller to warn about.
func (k *PerfEvalSink) Post(ctx context.Context, s summary.Summary) (sent int, err error) {
	var errs []error
	post := func(url string, headers map[string]string, payload any) {
		body, err := json.Marshal(payload)
		if err != nil {
			errs = append(errs, fmt.Errorf("ingest: encode: %w", err))
			return
		}
		if err := postBody(ctx, k.Client, url, k.Token, headers, body); err != nil {
			errs = append(errs, err)
			return
		}
		sent++
	}
	for _, row := range PerfRows(s, k.nightly()) {
		post(k.PerfURL, map[string]string{"X-Source": "perf-eval"}, row)
	}
	for _, t := range s.Accuracy {
		if t.Status != summary.StatusOK {
			continue
		}
		md := k.evalMeta(s, t.Task)
		if strings.HasPrefix(t.Entry, "bfcl/") {
			post(k.EvalURL, nil, with(md, map[string]any{"kind": "results", "source_file": filepath.ToSlash(filepath.Join(k.Dir, t.Entry)), "data": bfclResults(s, t)}))
			continue
		}
		if t.File == "" {
			continue
		}
		file := filepath.Join(k.Dir, t.File)
		data, err := os.ReadFile(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("ingest: %w", err))
			continue
		}
		if !json.Valid(data) {
			errs = append(errs, fmt.Errorf("ingest: %s is not JSON", file))
			continue
		}
		post(k.EvalURL, nil, with(md, map[string]any{"kind": "results", "source_file": filepath.ToSlash(file), "data": json.RawMessage(data)}))
		if k.NoSamples {
			continue
		}
		samples, _ := filepath.Glob(filepath.Join(filepath.Dir(file), "samples_*.jsonl"))
		sort.Strings(samples)
		for _, sf := range samples {
			batches, err := SampleBatches(sf, md)
			if err != nil {
				errs = append(errs, fmt.Errorf("ingest: %w", err))
			}
			for _, b := range batches {
				post(k.EvalURL, nil, b)
			}
		}
	}
	return sent, errors.Join(errs...)
}

// SampleBatches reads a samples_*.jsonl file into payloads of kind
// samples, each at most SamplesBatchBytes as JSON with md, one sample
// per line in order; a line that is not JSON is left out and named.
func SampleBatches(path string, md map[string]any) ([]map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	head := with(md, map[string]any{"kind": "samples", "source_file": filepath.ToSlash(path)})
	empty, err := json.Marshal(with(head, map[string]any{"samples": []json.RawMessage{}}))
	if err != nil {
		return nil, err
	}
	overhead := len(empty)
	var (
		out   []map[string]any
		batch []json.RawMessage
		size  int
		bad   []string
	)
	flush := func() {
		if len(batch) > 0 {
			out = append(out, with(head, map[string]any{"samples": batch}))
		}
		batch, size = nil, 0
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, line); err != nil {
			bad = append(bad, fmt.Sprintf("line %d", n))
			continue
		}
		sample := json.RawMessage(compact.Bytes())
		// One more byte: the comma between array elements.
		if len(batch) > 0 && overhead+size+len(sample)+1 > SamplesBatchBytes {
			flush()
		}
		batch = append(batch, sample)
		size += len(sample) + 1
	}
	flush()
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("%s: %w", path, err)
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("%s: skipped samples that are not JSON: %s", path, strings.Join(bad, ", "))
	}
	return out, nil
}
