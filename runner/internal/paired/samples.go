package paired

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ErrInput marks sample files that cannot be used.
var ErrInput = errors.New("bad lm_eval samples")

// Sample is one line of a samples file: one document under one filter.
type Sample struct {
	File    string
	Line    int
	DocID   int
	DocHash string
	// Filter is the lm_eval filter, e.g. "strict-match"; empty in files
	// from lm_eval versions that did not log it.
	Filter string
	// Metrics holds the per-document metric values named in the line's
	// "metrics" list (true/false read as 1/0).
	Metrics map[string]float64
	// Answer is filtered_resps as compact JSON, to tell whether the two
	// runs answered alike, not just equally well.
	Answer string
}

// maxLine bounds one sample line; few-shot prompts and long answers make
// lines of tens of kilobytes.
const maxLine = 64 << 20

// ReadFile reads a samples file.
func ReadFile(path string) ([]Sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInput, err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads samples from r; name is used in errors, which give the line.
// A document may appear once per filter; a second time is an error.
func Parse(r io.Reader, name string) ([]Sample, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var out []Sample
	seen := map[[2]string]int{}
	for line := 1; ; line++ {
		raw, err := readLine(br)
		if err == io.EOF && len(raw) == 0 {
			break
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%w: %s:%d: %w", ErrInput, name, line, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		s, perr := parseLine(raw)
		if perr != nil {
			return nil, fmt.Errorf("%w: %s:%d: %w", ErrInput, name, line, perr)
		}
		s.File, s.Line = name, line
		// Two documents may ask the same question (one doc_hash); one
		// document twice under one filter is a broken file.
		key := [2]string{s.Filter, DocKey(s.DocID, s.DocHash)}
		if first, dup := seen[key]; dup {
			return nil, fmt.Errorf("%w: %s:%d: doc_id %d, doc_hash %s (filter %q) already on line %d", ErrInput, name, line, s.DocID, s.DocHash, s.Filter, first)
		}
		seen[key] = line
		out = append(out, s)
		if err == io.EOF {
			break
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: no samples", ErrInput, name)
	}
	return out, nil
}

func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		return bytes.TrimSuffix(buf, []byte("\n")), err
	}
}

func parseLine(raw []byte) (Sample, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Sample{}, fmt.Errorf("not a JSON object: %w", err)
	}
	var s Sample
	if err := field(obj, "doc_id", &s.DocID, true); err != nil {
		return s, err
	}
	if err := field(obj, "doc_hash", &s.DocHash, true); err != nil {
		return s, err
	}
	if s.DocHash == "" {
		return s, errors.New("doc_hash is empty")
	}
	if err := field(obj, "filter", &s.Filter, false); err != nil {
		return s, err
	}
	if a, ok := obj["filtered_resps"]; ok {
		var b bytes.Buffer
		if err := json.Compact(&b, a); err == nil {
			s.Answer = b.String()
		}
	}
	var names []string
	if err := field(obj, "metrics", &names, false); err != nil {
		return s, err
	}
	s.Metrics = map[string]float64{}
	if _, listed := obj["metrics"]; listed {
		for _, n := range names {
			v, err := number(obj[n])
			if err != nil {
				return s, fmt.Errorf("metric %q: %w", n, err)
			}
			s.Metrics[n] = v
		}
		return s, nil
	}
	// Older lm_eval wrote no "metrics" list: take every number or boolean
	// at the top level that is not one of the known keys.
	for k, raw := range obj {
		if known[k] {
			continue
		}
		if v, err := number(raw); err == nil {
			s.Metrics[k] = v
		}
	}
	return s, nil
}

// known are the keys of a samples line that are not metric values.
var known = map[string]bool{
	"doc_id": true, "doc": true, "target": true, "arguments": true, "resps": true,
	"filtered_resps": true, "filter": true, "metrics": true, "doc_hash": true,
	"prompt_hash": true, "target_hash": true,
}

func field(obj map[string]json.RawMessage, key string, v any, required bool) error {
	raw, ok := obj[key]
	if !ok {
		if required {
			return fmt.Errorf("no %q", key)
		}
		return nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%q: %w", key, err)
	}
	return nil
}

// number reads a metric value: a JSON number, or a boolean as 1/0.
func number(raw json.RawMessage) (float64, error) {
	if raw == nil {
		return 0, errors.New("missing")
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err == nil {
		return f, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err == nil {
		if b {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("%s is not a number", raw)
}

// LatestFile returns the newest samples_<task>_<date>.jsonl in dir or in
// its subdirectories one level down (lm_eval's <model> folder). The date
// part is lexically sortable; two newest files with the same date are an
// error. A longer task name sharing the prefix
// (gsm8k_cot for gsm8k) does not match.
func LatestFile(dir, task string) (string, error) {
	var best, bestDate, tie string
	for _, pattern := range []string{filepath.Join(dir, "samples_*.jsonl"), filepath.Join(dir, "*", "samples_*.jsonl")} {
		matches, err := filepath.Glob(pattern)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrInput, err)
		}
		for _, m := range matches {
			date, ok := SamplesDate(filepath.Base(m), task)
			switch {
			case !ok:
			case date > bestDate:
				best, bestDate, tie = m, date, ""
			case date == bestDate:
				tie = m
			}
		}
	}
	if best == "" {
		return "", fmt.Errorf("%w: no samples_%s_<date>.jsonl in %s (was lm_eval run with --log_samples?)", ErrInput, task, dir)
	}
	if tie != "" {
		return "", fmt.Errorf("%w: %s and %s are both the newest samples of %s; which run is meant?", ErrInput, best, tie, task)
	}
	return best, nil
}

// SamplesDate returns the date part of base when it is the name of a
// samples file of task, samples_<task>_<date>.jsonl; dates sort lexically.
func SamplesDate(base, task string) (string, bool) {
	rest, ok := strings.CutPrefix(base, "samples_"+task+"_")
	if !ok {
		return "", false
	}
	date, ok := strings.CutSuffix(rest, ".jsonl")
	if !ok || !samplesDateRE.MatchString(date) {
		return "", false
	}
	return date, true
}

var samplesDateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T[0-9.\-]+$`)
