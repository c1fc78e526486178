package baseline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/paired"
)

// OutcomesFile is the compact per-question file a GPU job writes beside
// each lm_eval task's results (<task entry>/outcomes.json) from the
// samples lm_eval logged: what the history step keeps and the paired
// test reads, a few hundred kilobytes where the samples, with their
// prompts, run to hundreds of megabytes.
const OutcomesFile = "outcomes.json"

// MaxOutcomesFile bounds an outcomes file read back: some 100 bytes per
// question and metric leave room for a million questions.
const MaxOutcomesFile = 256 << 20

// ErrOutcomes marks an outcomes file that cannot be used.
var ErrOutcomes = errors.New("unusable per-question outcomes")

// WriteOutcomesFile writes o as JSON to path.
func WriteOutcomesFile(path string, o Outcomes) error {
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// ParseOutcomes reads and checks an outcomes file's contents; name is
// used in errors.
func ParseOutcomes(r io.Reader, name string) (Outcomes, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxOutcomesFile+1))
	if err != nil {
		return Outcomes{}, fmt.Errorf("%w: %s: %w", ErrOutcomes, name, err)
	}
	if len(data) > MaxOutcomesFile {
		return Outcomes{}, fmt.Errorf("%w: %s: larger than %d bytes", ErrOutcomes, name, MaxOutcomesFile)
	}
	var o Outcomes
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return Outcomes{}, fmt.Errorf("%w: %s: %w", ErrOutcomes, name, err)
	}
	if err := o.check(); err != nil {
		return Outcomes{}, fmt.Errorf("%w: %s: %w", ErrOutcomes, name, err)
	}
	return o, nil
}

// ReadOutcomesFile reads an outcomes file.
func ReadOutcomesFile(path string) (Outcomes, error) {
	f, err := os.Open(path)
	if err != nil {
		return Outcomes{}, fmt.Errorf("%w: %w", ErrOutcomes, err)
	}
	defer f.Close()
	return ParseOutcomes(f, path)
}

// check is what a reader of Outcomes relies on: one score per document
// in every column, each 0, 1 or -, distinct non-empty hashes.
func (o Outcomes) check() error {
	if o.Missing != "" {
		return nil
	}
	if len(o.DocHashes) == 0 {
		return errors.New("no documents")
	}
	if len(o.DocIDs) != 0 && len(o.DocIDs) != len(o.DocHashes) {
		return fmt.Errorf("%d doc ids for %d documents", len(o.DocIDs), len(o.DocHashes))
	}
	seen := make(map[string]bool, len(o.DocHashes))
	for _, h := range o.DocHashes {
		if h == "" || seen[h] {
			return fmt.Errorf("doc hash %q empty or repeated", h)
		}
		seen[h] = true
	}
	for k, col := range o.Scores {
		if len(col) != len(o.DocHashes) {
			return fmt.Errorf("metric %q: %d scores for %d documents", k, len(col), len(o.DocHashes))
		}
		if strings.Trim(col, "01-") != "" {
			return fmt.Errorf("metric %q: scores other than 0, 1 and -", k)
		}
	}
	return nil
}

// Samples turns outcomes back into per-document samples, one per
// document and filter with every metric scored under that filter, for
// the paired test.
func (o Outcomes) Samples() []paired.Sample {
	keys := make([]string, 0, len(o.Scores))
	for k := range o.Scores {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	type docFilter struct {
		doc    int
		filter string
	}
	index := map[docFilter]int{}
	var out []paired.Sample
	for _, k := range keys {
		metric, filter, _ := strings.Cut(k, ",")
		for i, c := range []byte(o.Scores[k]) {
			if c == '-' {
				continue
			}
			key := docFilter{i, filter}
			j, ok := index[key]
			if !ok {
				j = len(out)
				index[key] = j
				s := paired.Sample{File: o.Artifact, DocHash: o.DocHashes[i], Filter: filter, Metrics: map[string]float64{}}
				if i < len(o.DocIDs) {
					s.DocID = o.DocIDs[i]
				}
				out = append(out, s)
			}
			v := 0.0
			if c == '1' {
				v = 1
			}
			out[j].Metrics[metric] = v
		}
	}
	return out
}
