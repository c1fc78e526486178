package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// LMEvalResult is the aggregated results file of one lm_eval run. It reads
// the layouts of lm-evaluation-harness v0.4.9 to v0.4.12.
type LMEvalResult struct {
	// Tasks holds the metrics of each task of "results", plus the groups of
	// "groups" that "results" does not already list.
	Tasks map[string]LMEvalTask
	// NShot is the number of few-shot examples used per task ("n-shot").
	NShot map[string]int
	// NSamples is the number of documents per task ("n-samples").
	NSamples map[string]LMEvalSampleCount
	// Versions is each task's version as written, e.g. "3.0".
	Versions map[string]string
	// HigherIsBetter tells per task and metric name which way is better.
	HigherIsBetter map[string]map[string]bool
	// LMEvalVersion is the harness version, e.g. "0.4.12".
	LMEvalVersion string
	// Model is the lm_eval model type, e.g. "local-completions".
	Model string
	// ModelArgs holds config.model_args, which v0.4.10+ writes as an object
	// and older versions as "k=v,k=v". Values are as written: strings bare,
	// other JSON values as JSON text (32, false, null).
	ModelArgs map[string]string
	// Raw holds every top-level key as read.
	Raw map[string]json.RawMessage
}

// LMEvalTask holds the metrics of one task or group.
type LMEvalTask struct {
	Name      string // "" before v0.4.12
	Alias     string
	SampleLen int // 0 before v0.4.12
	// Metrics maps "<metric>,<filter>" to its value, for example
	// "exact_match,strict-match" → 0.76.
	Metrics map[string]float64
	// Stderr maps the same keys as Metrics to the standard error written as
	// "<metric>_stderr,<filter>". A stderr of "N/A" is absent.
	Stderr map[string]float64
	// Invalid maps each metric key whose value is not a finite number to
	// what was written: "NaN", "Infinity", "null", `the string "0.9"`.
	// Such a score is no score; Metrics does not hold it.
	Invalid map[string]string
}

// LMEvalSampleCount is a task's document count before and after --limit.
type LMEvalSampleCount struct {
	Original  int
	Effective int
}

// ErrNoLMEvalResults marks a directory without an lm_eval results file; it
// wraps fs.ErrNotExist.
var ErrNoLMEvalResults = fmt.Errorf("no lm_eval results file: %w", fs.ErrNotExist)

// resultsFileName matches lm_eval's results file names: results_<date>.json
// in a model folder, or <stem>_<date>.json when --output_path ends in .json.
// The date is datetime.isoformat() with ":" replaced by "-".
var resultsFileName = regexp.MustCompile(`^(.+)_(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.json$`)

// FindLMEvalResults returns the newest lm_eval results file in dir or in one
// of its subdirectories. "Newest" compares the timestamps in the file names,
// which sort as text.
func FindLMEvalResults(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("find lm_eval results: %w", err)
	}
	var best, bestStamp string
	consider := func(path string) {
		stamp, ok := resultsStamp(filepath.Base(path))
		if ok && (stamp > bestStamp || (stamp == bestStamp && path > best)) {
			best, bestStamp = path, stamp
		}
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		if !e.IsDir() {
			consider(path)
			continue
		}
		sub, err := os.ReadDir(path)
		if err != nil {
			return "", fmt.Errorf("find lm_eval results: %w", err)
		}
		for _, s := range sub {
			if !s.IsDir() {
				consider(filepath.Join(path, s.Name()))
			}
		}
	}
	if best == "" {
		return "", fmt.Errorf("find lm_eval results in %s: %w", dir, ErrNoLMEvalResults)
	}
	return best, nil
}

// resultsStamp returns the sortable timestamp of a results file name.
func resultsStamp(name string) (string, bool) {
	if strings.HasPrefix(name, "samples_") {
		return "", false
	}
	if m := resultsFileName.FindStringSubmatch(name); m != nil {
		return m[2], true
	}
	// Any other results_*.json still counts, ordered by its suffix.
	if rest, ok := strings.CutPrefix(name, "results_"); ok && strings.HasSuffix(rest, ".json") {
		return strings.TrimSuffix(rest, ".json"), true
	}
	return "", false
}

// ParseLMEval reads an lm_eval aggregated results file.
func ParseLMEval(r io.Reader) (LMEvalResult, error) {
	return parseReader(r, lmEvalWhat, parseLMEval)
}

// ParseLMEvalFile is ParseLMEval on the named file; errors name the file.
func ParseLMEvalFile(path string) (LMEvalResult, error) {
	return parseFile(path, lmEvalWhat, parseLMEval)
}

// lmEvalWhat names an lm_eval results file in errors.
const lmEvalWhat = "lm_eval results"

func parseLMEval(r io.Reader) (LMEvalResult, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return LMEvalResult{}, err
	}
	obj, err := decodeObject(markPythonJSON(data))
	if err != nil {
		return LMEvalResult{}, err
	}
	res := LMEvalResult{Raw: obj.values}
	var errs []error
	section := func(key string, into any) bool {
		raw, ok := obj.values[key]
		if !ok || string(raw) == "null" {
			return false
		}
		if err := json.Unmarshal(raw, into); err != nil {
			errs = append(errs, fmt.Errorf("key %q: unexpected layout: %w", key, err))
			return false
		}
		return true
	}

	var tasks, groups map[string]map[string]json.RawMessage
	if _, ok := obj.values["results"]; !ok {
		errs = append(errs, fmt.Errorf("%w %q", ErrMissingKey, "results"))
	}
	section("results", &tasks)
	section("groups", &groups)
	res.Tasks = make(map[string]LMEvalTask, len(tasks))
	for name, members := range tasks {
		res.Tasks[name] = lmEvalTask(members)
	}
	for name, members := range groups {
		if _, ok := res.Tasks[name]; !ok {
			res.Tasks[name] = lmEvalTask(members)
		}
	}

	var nShot map[string]json.RawMessage
	if section("n-shot", &nShot) {
		res.NShot = nShots(nShot)
	}
	var nSamples map[string]map[string]json.RawMessage
	if section("n-samples", &nSamples) {
		res.NSamples = sampleCounts(nSamples)
	}
	var versions map[string]json.RawMessage
	if section("versions", &versions) {
		res.Versions = taskVersions(versions)
	}
	var higher map[string]map[string]json.RawMessage
	if section("higher_is_better", &higher) {
		res.HigherIsBetter = higherIsBetter(higher)
	}
	if raw, ok := obj.values["lm_eval_version"]; ok && string(raw) != "null" {
		res.LMEvalVersion = scalarText(raw)
	}
	var config map[string]json.RawMessage
	if section("config", &config) {
		if raw, ok := config["model"]; ok && string(raw) != "null" {
			res.Model = scalarText(raw)
		}
		args, err := modelArgs(config["model_args"])
		if err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", "config.model_args", err))
		}
		res.ModelArgs = args
	}
	if err := errors.Join(errs...); err != nil {
		return LMEvalResult{}, err
	}
	return res, nil
}

// nShots are the few-shot counts by task, those that are integers.
func nShots(nShot map[string]json.RawMessage) map[string]int {
	out := map[string]int{}
	for task, raw := range nShot {
		if n, ok := integer(raw); ok {
			out[task] = n
		}
	}
	return out
}

// sampleCounts are the documents each task had and evaluated.
func sampleCounts(nSamples map[string]map[string]json.RawMessage) map[string]LMEvalSampleCount {
	out := map[string]LMEvalSampleCount{}
	for task, counts := range nSamples {
		original, _ := integer(counts["original"])
		effective, _ := integer(counts["effective"])
		out[task] = LMEvalSampleCount{Original: original, Effective: effective}
	}
	return out
}

// taskVersions are the tasks' versions as text; a null is none.
func taskVersions(versions map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for task, raw := range versions {
		if string(raw) != "null" {
			out[task] = scalarText(raw)
		}
	}
	return out
}

// higherIsBetter is each task's direction per metric, those given as
// booleans.
func higherIsBetter(higher map[string]map[string]json.RawMessage) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for task, metrics := range higher {
		m := map[string]bool{}
		for metric, raw := range metrics {
			var b bool
			if json.Unmarshal(raw, &b) == nil && string(raw) != "null" {
				m[metric] = b
			}
		}
		out[task] = m
	}
	return out
}

func lmEvalTask(members map[string]json.RawMessage) LMEvalTask {
	t := LMEvalTask{Metrics: map[string]float64{}, Stderr: map[string]float64{}}
	for key, raw := range members {
		switch key {
		case "name":
			t.Name = scalarText(raw)
			continue
		case "alias":
			t.Alias = scalarText(raw)
			continue
		case "sample_len":
			t.SampleLen, _ = integer(raw)
			continue
		}
		v, ok := number(raw)
		metric, isStderr := stderrOf(key)
		if err := plausible(raw); err != nil {
			// A number no evaluation computes is refused, stderr or not.
			if t.Invalid == nil {
				t.Invalid = map[string]string{}
			}
			t.Invalid[key] = fmt.Sprintf("the number %s, beyond ±%g", raw, MaxMagnitude)
			continue
		}
		switch {
		case isStderr && ok:
			t.Stderr[metric] = v
		case isStderr:
			// "N/A" when no stderr was computed: absent.
		case ok:
			t.Metrics[key] = v
		default:
			if t.Invalid == nil {
				t.Invalid = map[string]string{}
			}
			t.Invalid[key] = describeValue(raw)
		}
	}
	return t
}

// stderrOf maps "<metric>_stderr,<filter>" to "<metric>,<filter>".
func stderrOf(key string) (string, bool) {
	metric, filter, hasFilter := strings.Cut(key, ",")
	base, ok := strings.CutSuffix(metric, "_stderr")
	if !ok {
		return "", false
	}
	if hasFilter {
		return base + "," + filter, true
	}
	return base, true
}

// modelArgs reads model_args in either of its forms.
func modelArgs(raw json.RawMessage) (map[string]string, error) {
	args := map[string]string{}
	switch kind(raw) {
	case "nothing", "null":
		return args, nil
	case "a string":
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		// lm_eval's own rule: split on ",", then on the first "=".
		for _, part := range strings.Split(s, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			k, v, _ := strings.Cut(part, "=")
			args[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		return args, nil
	case "an object":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, err
		}
		for k, v := range m {
			args[k] = scalarText(v)
		}
		return args, nil
	}
	return nil, fmt.Errorf("want an object or a string, got %s", kind(raw))
}

// scalarText renders a JSON string bare and any other value as compact JSON.
func scalarText(raw json.RawMessage) string {
	var s string
	if kind(raw) == "a string" && json.Unmarshal(raw, &s) == nil {
		return s
	}
	var compact bytes.Buffer
	if json.Compact(&compact, raw) != nil {
		return string(raw)
	}
	return compact.String()
}

// describeValue says what a non-number value is, for an error message.
func describeValue(raw json.RawMessage) string {
	var s string
	if kind(raw) == "a string" && json.Unmarshal(raw, &s) == nil {
		if tok, ok := nonFinite(s); ok {
			return tok
		}
		return fmt.Sprintf("the string %q", s)
	}
	if k := kind(raw); k != "a number" {
		return k
	}
	return fmt.Sprintf("the number %s, out of range", raw)
}
