package job

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benchkite/benchkite/runner/internal/detect"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/results"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
)

// rerunFile is where the k-th run on alarm of a run writes its result.
func (j *Job) rerunFile(run workloads.BenchRun, k int) string {
	return filepath.Join(j.benchDir(), "bench-"+run.Name+"-rerun-"+strconv.Itoa(k)+".json")
}

// rerunOnAlarm runs the bench again on the same server when the
// regression gate raises the alarm (detect.AlarmFactor) on a run measured
// on fewer than detect.RerunReps repetitions, until it has them, so that
// one slow run cannot fail the night and a real drop is judged on the
// median of several (the gate judges again on all of them). A recipe opts out with
// rerun_on_alarm: false. It returns the repetitions and how many were
// added.
func (j *Job) rerunOnAlarm(ctx context.Context, runs *benchSession, run workloads.BenchRun, reps []results.BenchResult, out io.Writer) ([]results.BenchResult, int, error) {
	more := j.reruns(run, len(reps))
	if more == 0 {
		return reps, 0, nil
	}
	merged, err := results.MedianOf(reps)
	if err != nil {
		return reps, 0, err
	}
	br := summary.FromBench(run.Name, merged, j.res.Recipe.NumGPUs)
	br.Config = run.Config
	br.RepetitionValues = j.repetitionValues(run, reps)
	flagged := gate.Gater{Res: j.res, History: j.history}.Alarm(ctx, &j.sum, br)
	if len(flagged) == 0 {
		return reps, 0, nil
	}
	fmt.Fprintf(j.log, "runner: %s: the regression gate raises the alarm on %s on %d repetition(s); re-running the bench %d more time(s) on the same server before deciding (GPU cost: %d extra run(s))\n",
		run.Name, strings.Join(flagged, ", "), len(reps), more, more)
	for k := 1; k <= more; k++ {
		spec, err := j.benchSpecTo(run, j.rerunFile(run, k))
		if err != nil {
			return reps, k - 1, err
		}
		spec.Stdout, spec.Stderr = out, out
		before, err := dirNames(j.benchDir())
		if err != nil {
			return reps, k - 1, fmt.Errorf("re-run %d on alarm: %w", k, err)
		}
		w := results.Window{Start: time.Now()}
		err = runs.run(ctx, spec)
		w.End = time.Now()
		if err != nil {
			return reps, k - 1, fmt.Errorf("re-run %d on alarm: %w", k, err)
		}
		if err := ownBenchFile(j.rerunFile(run, k), before, w); err != nil {
			return reps, k - 1, fmt.Errorf("re-run %d on alarm: %w", k, err)
		}
		b, err := results.ParseBenchFile(j.rerunFile(run, k))
		if err != nil {
			return reps, k - 1, fmt.Errorf("re-run %d on alarm: %w", k, err)
		}
		if err := b.Valid(run.NumPrompts); err != nil {
			return reps, k - 1, fmt.Errorf("re-run %d on alarm: %w", k, err)
		}
		reps = append(reps, b)
	}
	return reps, more, nil
}

// reruns is how many more times an alarm runs the bench of run measured
// on reps repetitions: none when it has enough or the recipe opts out.
func (j *Job) reruns(run workloads.BenchRun, reps int) int {
	if reps >= detect.RerunReps || j.rerunPolicy(run) == nil {
		return 0
	}
	return detect.RerunReps - reps
}

// rerunPolicy is the run's regression policy when it may be re-run on
// alarm, nil otherwise.
func (j *Job) rerunPolicy(run workloads.BenchRun) *workloads.Regression {
	b := j.res.Recipe.Bench
	if b == nil {
		return nil
	}
	for i := range b.Configs {
		if b.Configs[i].Name == run.Config {
			if p := b.RegressionFor(&b.Configs[i]); p != nil && !p.NoRerun {
				return p
			}
		}
	}
	return nil
}
