package report

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
	"github.com/benchkite/benchkite/runner/internal/classify"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// downloadSummaries fetches each selected recipe's summary from its own
// step (--step): a summary another step of the build uploaded under a
// recipe's path is not that recipe's. Without the list (a build whose
// list was cut) it falls back to every summary of the build.
func downloadSummaries(ctx context.Context, agent buildkite.Agent, dir string, selected []string, left int) {
	get := func(query, step string) {
		if err := agent.Download(ctx, query, ".", step); err != nil {
			// A lost job leaves none; the report lists it.
			fmt.Fprintf(agent.Log, "runner: download summaries: %v\n", err)
		}
	}
	if len(selected) == 0 || left > 0 {
		get(filepath.ToSlash(dir)+"/*/summary.json", "")
		return
	}
	for _, name := range selected {
		get(filepath.ToSlash(dir)+"/"+name+"/summary.json", contract.StepKey(name))
	}
}

// lost are the selected recipes that left no summary, each as an error
// row saying what the build says of its step (its job's state), first
// in the report. A recipe left out of the list (left > 0) is found among
// the build's jobs when the API answers.
func lost(selected []string, left int, sums []summary.Summary, jobs map[string]JobState, err error, problems []string) ([]summary.Summary, []string) {
	have := map[string]bool{}
	for _, s := range sums {
		have[s.Recipe] = true
	}
	if err != nil {
		problems = append(problems, fmt.Sprintf("the state of steps without a summary is not known: %v", err))
	}
	names := slices.Clone(selected)
	if left > 0 {
		if jobs == nil {
			problems = append(problems, fmt.Sprintf("%d selected recipe(s) were not listed to the report step and the build's jobs could not be read: a lost one is not shown", left))
		}
		for key := range jobs {
			if name, ok := strings.CutPrefix(key, contract.StepKey("")); ok && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		slices.Sort(names[len(selected):])
	}
	var out []summary.Summary
	for _, name := range names {
		if have[name] {
			continue
		}
		state := "unknown"
		var failure *summary.Failure
		if st, ok := jobs[contract.StepKey(name)]; ok {
			state = st.String()
			// The step's state is all that is known of why: a lost agent
			// or an unscheduled pod is infra.
			failure = classify.Job(st.State, st.ExitStatus, st.SignalReason).Summary(nil)
		} else if jobs != nil {
			state = "not in the build"
		}
		out = append(out, summary.Summary{Recipe: name, Verdict: summary.VerdictError, Failure: failure,
			Problems: []string{"no summary.json: the step is " + state}})
	}
	return out, problems
}

// apiStates asks the Buildkite API for this build's jobs, with the token
// the history step uses.
func apiStates(getenv func(string) string, api func() (*bkapi.Client, error)) JobStates {
	return func(ctx context.Context) (map[string]JobState, error) {
		number, err := strconv.Atoi(getenv("BUILDKITE_BUILD_NUMBER"))
		if err != nil {
			return nil, fmt.Errorf("no build number (BUILDKITE_BUILD_NUMBER=%q)", getenv("BUILDKITE_BUILD_NUMBER"))
		}
		client, err := api()
		if err != nil {
			return nil, err
		}
		b, err := client.GetBuildAllTries(ctx, number)
		if err != nil {
			return nil, err
		}
		return jobStates(b.Jobs), nil
	}
}

// jobStates is each step's latest try, with the tries retried before it.
func jobStates(jobs []bkapi.Job) map[string]JobState {
	out := map[string]JobState{}
	var retried []bkapi.Job
	for _, j := range jobs {
		switch {
		case j.StepKey == "":
		case j.Retried:
			retried = append(retried, j)
		default:
			st := out[j.StepKey]
			st.State, st.ExitStatus, st.SignalReason = j.State, j.ExitStatus, j.SignalReason
			out[j.StepKey] = st
		}
	}
	for _, j := range retried {
		st := out[j.StepKey]
		st.Retried = append(st.Retried, Try{State: j.State, ExitStatus: j.ExitStatus, SignalReason: j.SignalReason, Started: j.StartedAt, Finished: j.FinishedAt})
		out[j.StepKey] = st
	}
	return out
}

// withRetries adds to each recipe's GPU time what its step's retried
// tries held: GPUs (the recipe's, from its summary) × each try's wall
// time, and the tries by class. A recipe whose GPU count is unknown (its
// step left no summary) counts its tries without GPU time.
func withRetries(sums []summary.Summary, jobs map[string]JobState) []summary.Summary {
	out := make([]summary.Summary, len(sums))
	for i, s := range sums {
		out[i] = s
		tries := jobs[contract.StepKey(s.Recipe)].Retried
		if len(tries) == 0 {
			continue
		}
		g := summary.GPUTime{GPUs: s.NumGPUs}
		if s.GPUTime != nil {
			g = *s.GPUTime
		}
		g.RetriedTries = maps.Clone(g.RetriedTries)
		if g.RetriedTries == nil {
			g.RetriedTries = map[string]int{}
		}
		for _, t := range tries {
			g.RetriedTries[string(classify.Job(t.State, t.ExitStatus, t.SignalReason).Class)]++
			if g.GPUs > 0 && !t.Started.IsZero() && t.Finished.After(t.Started) {
				g.Retried += t.Finished.Sub(t.Started).Seconds() * float64(g.GPUs)
			}
		}
		out[i].GPUTime = &g
	}
	return out
}
