package job

import (
	"context"
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// gate is the gate phase: it fails when any gate failed. A gate without
// a value is an error and one without a baseline leaves the run
// unverified; the verdict counts both, and both are shown.
func (j *Job) gate(ctx context.Context) error {
	j.sum.Gates = gate.Gater{Res: j.res, History: j.history, ResultsDir: j.dir}.Apply(ctx, &j.sum)
	j.sum.Series = gate.Series(ctx, j.history, &j.sum)
	var failed []string
	for _, g := range j.sum.Gates {
		fmt.Fprintf(j.log, "%s %s\n", annotate.VerdictMark(g.Verdict), g.Message)
		if g.Verdict == summary.VerdictFail {
			failed = append(failed, g.Message)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d gate(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}
