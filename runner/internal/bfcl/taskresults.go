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
	return summary.TaskResult{Task: p.Name(), Status: summary.StatusFailed, Error: err.Error()}
}

// MetricAcc is the metric of every BFCL result.
const MetricAcc = workloads.BFCLMetric
