package baseline

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/paired"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Outcomes is one night's per-question results of an lm_eval task, read
// from the samples its job logged, kept so that a later run can pair its
// answers with them without the samples (megabytes of prompts) at hand.
// Each document's hash is stored once and each metric and filter as one
// character per document, so a task of 1319 documents takes some 90 kB.
type Outcomes struct {
	Task        string `json:"task"`
	BuildNumber int    `json:"build_number"`
	ImageDigest string `json:"image_digest,omitempty"`
	// Artifact is the samples file read.
	Artifact string `json:"artifact,omitempty"`
	// Missing says why there are none: no samples artifact, or one that
	// could not be read. The fields below are then empty.
	Missing string `json:"missing,omitempty"`
	// DocHashes are the documents' doc_hash, in file order, and DocIDs
	// their doc_id: two documents may ask the same question. Outcomes
	// stored before doc ids were have none and pair by hash alone.
	DocHashes []string `json:"doc_hashes,omitempty"`
	DocIDs    []int    `json:"doc_ids,omitempty"`
	// Scores maps a gate's metric key, "metric,filter" as lm_eval's
	// results name it ("metric" alone for samples without a filter), to
	// one character per document of DocHashes: '1' right, '0' wrong, '-'
	// not scored so. Only metrics that are 0 or 1 on every document are
	// kept: the paired test takes no others.
	Scores map[string]string `json:"scores,omitempty"`
}

// OutcomesOf condenses a samples file's lines into Outcomes.
func OutcomesOf(task string, samples []paired.Sample) Outcomes {
	o := Outcomes{Task: task, Scores: map[string]string{}}
	index := map[string]int{}
	for _, s := range samples {
		if _, ok := index[paired.DocKey(s.DocID, s.DocHash)]; !ok {
			index[paired.DocKey(s.DocID, s.DocHash)] = len(o.DocHashes)
			o.DocHashes = append(o.DocHashes, s.DocHash)
			o.DocIDs = append(o.DocIDs, s.DocID)
		}
	}
	cols := map[string][]byte{}
	binary := map[string]bool{}
	for _, s := range samples {
		for m, v := range s.Metrics {
			key := m
			if s.Filter != "" {
				key += "," + s.Filter
			}
			col, ok := cols[key]
			if !ok {
				col = bytes.Repeat([]byte{'-'}, len(o.DocHashes))
				cols[key], binary[key] = col, true
			}
			switch v {
			case 1:
				col[index[paired.DocKey(s.DocID, s.DocHash)]] = '1'
			case 0:
				col[index[paired.DocKey(s.DocID, s.DocHash)]] = '0'
			default:
				binary[key] = false
			}
		}
	}
	for k, col := range cols {
		if binary[k] {
			o.Scores[k] = string(col)
		}
	}
	return o
}

// ByHash says the outcomes were stored without doc ids: Right is then
// keyed by doc_hash alone.
func (o Outcomes) ByHash() bool { return len(o.DocIDs) != len(o.DocHashes) }

// Right returns whether each document was right under the gate's metric
// key, by paired.DocKey (by doc_hash when ByHash), or why that cannot be
// told.
func (o Outcomes) Right(metric string) (map[string]bool, error) {
	if o.Missing != "" {
		return nil, fmt.Errorf("no per-question outcomes: %s", o.Missing)
	}
	col, ok := o.Scores[metric]
	if !ok {
		var keys []string
		for k := range o.Scores {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return nil, fmt.Errorf("the stored outcomes of %s have no metric %q (they have %s)", o.Task, metric, strings.Join(keys, ", "))
	}
	if len(col) != len(o.DocHashes) {
		return nil, fmt.Errorf("the stored outcomes of %s are damaged: %d scores for %d documents", o.Task, len(col), len(o.DocHashes))
	}
	out := make(map[string]bool, len(col))
	for i, c := range []byte(col) {
		switch c {
		case '1', '0':
			key := o.DocHashes[i]
			if !o.ByHash() {
				key = paired.DocKey(o.DocIDs[i], key)
			}
			out[key] = c == '1'
		case '-':
		default:
			return nil, fmt.Errorf("the stored outcomes of %s are damaged: score %q", o.Task, c)
		}
	}
	return out, nil
}

// OutcomeNights are the indexes of the nights whose outcomes a
// baseline_from gate may want: the newest night of each model and image
// digest, since the gate takes the newest night with tonight's model and
// digest, else the newest night. Summaries that do not parse count as a
// model and digest of their own.
func OutcomeNights(nights []Night) []int {
	var out []int
	seen := map[[2]string]bool{}
	for i, n := range nights {
		if n.Failed {
			continue // baseline_from compares only with nights that passed
		}
		s, err := summary.Read(bytes.NewReader(n.Summary))
		key := [2]string{s.Model, s.ImageDigest}
		if err != nil {
			key = [2]string{"unreadable", fmt.Sprint(i)}
		}
		if !seen[key] {
			seen[key] = true
			out = append(out, i)
		}
	}
	return out
}

// OutcomeSource fetches a night's per-question outcomes; the Fetcher is
// one.
type OutcomeSource interface {
	Outcomes(ctx context.Context, night Night, recipe, task string) (Outcomes, error)
}

// Outcomes fetches the per-question outcomes of task that the night's
// job uploaded under the recipe's results directory: the compact
// <task>/outcomes.json its job wrote, else (nights before it did) the
// samples lm_eval logged (<task>/samples_<task>_<date>.jsonl, or one
// folder further down), streamed to disk and condensed. A night without
// either gives Outcomes with Missing set, a file that cannot be fetched
// or read Missing starting "could not"; an error means the API itself
// failed.
func (f Fetcher) Outcomes(ctx context.Context, night Night, recipe, task string) (Outcomes, error) {
	o := Outcomes{Task: task, BuildNumber: night.BuildNumber, ImageDigest: digestOf(night)}
	missing := func(format string, args ...any) (Outcomes, error) {
		o.Missing = fmt.Sprintf(format, args...)
		return o, nil
	}
	if f.API == nil {
		return o, fmt.Errorf("no Buildkite API client: %w", bkapi.ErrNoToken)
	}
	if night.JobID == "" {
		return missing("the night's job is not known")
	}
	arts, err := f.API.ListJobArtifacts(ctx, night.BuildNumber, night.JobID)
	if err != nil {
		if systemic(err) {
			return o, err
		}
		return missing("could not list the night's artifacts: %v", err)
	}
	dir := contract.ResultsDir(recipe) + "/" + task + "/"
	for _, a := range arts {
		if a.Path != dir+OutcomesFile || a.State != bkapi.ArtifactFinished {
			continue
		}
		data, err := f.API.DownloadArtifact(ctx, a)
		if err != nil {
			if systemic(err) {
				return o, err
			}
			return missing("could not download %s: %v", a.Path, err)
		}
		c, err := ParseOutcomes(bytes.NewReader(data), a.Path)
		if err != nil {
			return missing("could not read %v", err)
		}
		c.Task, c.BuildNumber, c.ImageDigest, c.Artifact = task, o.BuildNumber, o.ImageDigest, a.Path
		return c, nil
	}
	best, tie := newestSamples(arts, dir, task)
	switch {
	case best == nil:
		return missing("no %s%s or samples artifact %ssamples_%s_<date>.jsonl (was lm_eval run with --log_samples?)", dir, OutcomesFile, dir, task)
	case tie != "":
		return missing("could not tell which samples to read: %s and %s are both the newest of %s", best.Path, tie, task)
	}
	o.Artifact = best.Path
	// Samples with few-shot prompts and long answers run to hundreds of
	// megabytes: they go to disk and are read a line at a time.
	file, err := f.API.DownloadArtifactFile(ctx, *best, "")
	if err != nil {
		if systemic(err) {
			return o, err
		}
		return missing("could not download %s: %v", best.Path, err)
	}
	defer os.Remove(file)
	fh, err := os.Open(file)
	if err != nil {
		return missing("could not read %s: %v", best.Path, err)
	}
	defer fh.Close()
	samples, err := paired.Parse(fh, best.Path)
	if err != nil {
		return missing("could not read %v", err)
	}
	c := OutcomesOf(task, samples)
	c.BuildNumber, c.ImageDigest, c.Artifact = o.BuildNumber, o.ImageDigest, o.Artifact
	return c, nil
}

// newestSamples is the newest of the task's samples files among arts, in
// dir or one folder further down; tie names another file as new, when
// there is one.
func newestSamples(arts []bkapi.Artifact, dir, task string) (best *bkapi.Artifact, tie string) {
	var bestDate string
	for i, a := range arts {
		rel, ok := strings.CutPrefix(a.Path, dir)
		if !ok || strings.Count(rel, "/") > 1 || a.State != bkapi.ArtifactFinished {
			continue
		}
		date, ok := paired.SamplesDate(path.Base(rel), task)
		switch {
		case !ok:
		case date > bestDate:
			best, bestDate, tie = &arts[i], date, ""
		case date == bestDate:
			tie = a.Path
		}
	}
	return best, tie
}

func digestOf(n Night) string {
	s, err := summary.Read(bytes.NewReader(n.Summary))
	if err != nil {
		return ""
	}
	return s.ImageDigest
}
