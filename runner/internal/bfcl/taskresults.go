package bfcl

import (
	"path/filepath"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// TaskResults are the accuracy results of a run in summary.json's shape:
// bfcl_<category> first, then bfcl_<leaf> for each leaf of a group, each
// with metric acc (a fraction). File is the score source relative to dir,
// the directory Prepare was given.
func (r *Result) TaskResults() []summary.TaskResult {
	one := func(s Score, samples int) summary.TaskResult {
		return summary.TaskResult{
			Task:    ResultName(s.Category),
			Status:  summary.StatusOK,
			Metrics: map[string]float64{MetricAcc: s.Acc},
			Samples: samples,
			File:    filepath.ToSlash(filepath.Join(r.Plan.Category, strings.SplitN(s.Source, ":", 2)[0])),
			Entry:   EntryOf(r.Plan.Category),
		}
	}
	out := []summary.TaskResult{one(r.Score, r.Total())}
	for _, s := range r.Sub {
		out = append(out, one(s, r.Entries[s.Category]))
	}
	return out
}

// FailedTaskResult is the summary entry of a category run that broke.
func FailedTaskResult(p Plan, err error) summary.TaskResult {
	return summary.TaskResult{Task: p.Name(), Entry: EntryOf(p.Category), Status: summary.StatusFailed, Error: err.Error()}
}

// EntryOf is the summary entry of a category's run, "bfcl/<category>":
// a leaf's result from a group's run is told apart from the leaf's own.
func EntryOf(category string) string { return "bfcl/" + category }

// MetricAcc is the metric of every BFCL result.
const MetricAcc = workloads.BFCLMetric
