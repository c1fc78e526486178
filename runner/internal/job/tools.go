package job

import (
	"context"
	"fmt"

	"github.com/benchkite/benchkite/runner/internal/confine"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/tools"
)

// toolsRequest is what the run needs installed: lm-eval when it runs
// accuracy tasks, bfcl-eval when it runs BFCL; nothing under bench-only.
func (j *Job) toolsRequest() tools.Request {
	req := tools.Request{Mode: j.cfg.Tools, Dir: j.cfg.ToolsDir, Environ: j.environ, Log: j.log, Now: j.now}
	if j.runsAccuracy() {
		req.Set = tools.Locked(j.res.BFCL != nil)
	}
	return req
}

// runsAccuracy says whether lm_eval or BFCL are part of this run.
func (j *Job) runsAccuracy() bool {
	if j.cfg.BenchOnly || j.res.Recipe.BenchOnly {
		return false
	}
	return len(j.res.Tasks) > 0 || j.res.BFCL != nil
}

// expectedTools are the tools the run uses: those provisioned, or, before
// provisioning (and in `runner plan`), where provisioning puts them.
func (j *Job) expectedTools() tools.Tools {
	if j.tools.LMEval != "" || j.tools.Python != "" {
		return j.tools
	}
	t, err := tools.Expect(j.toolsRequest())
	if err != nil || t.LMEval == "" {
		t.LMEval = "lm_eval"
	}
	return t
}

// provision is the tools phase: it runs before the server starts, so a
// failed install costs no model load.
func (j *Job) provision(ctx context.Context) error {
	// Where model code cannot be confined, the job stops here, before
	// any model is loaded, rather than run it where it reads tokens.
	if p := j.modelCode(); p != nil {
		if err := confine.Probe(ctx, *p); err != nil {
			return fmt.Errorf("confine the processes that run model code: %w", err)
		}
		fmt.Fprintf(j.log, "runner: the server, bench, lm_eval and BFCL run in user and mount namespaces of their own (read-only: %s)\n", pathsOrNothing(p.ReadOnly))
	} else {
		fmt.Fprintf(j.log, "runner: --unconfined: the server, bench, lm_eval and BFCL run as the runner's uid in its namespaces, where they can read every process of that uid\n")
	}
	t, err := tools.Provision(ctx, j.procs, j.toolsRequest())
	if err != nil {
		return err
	}
	j.tools = t
	if t.Mode == tools.ModePath && j.runsAccuracy() {
		// Nothing was installed: what ran is what the interpreter has.
		t.Versions = j.pathVersions(ctx)
		j.sum.Fingerprint = fingerprintWith(j.res, t.Versions)
	}
	j.sum.Tools = &summary.Tools{
		Mode:            string(t.Mode),
		Lock:            t.Lock,
		Versions:        t.Versions,
		Reused:          t.Reused,
		DurationSeconds: t.Duration.Seconds(),
	}
	return nil
}

// toolsPlan are the install commands, for `runner plan`, or with
// --tools path the question of which versions are there.
func (j *Job) toolsPlan() ([]proc.Spec, error) {
	specs, err := tools.Plan(j.toolsRequest())
	if err != nil {
		return nil, fmt.Errorf("plan tools: %w", err)
	}
	if j.cfg.Tools == tools.ModePath {
		s, err := j.versionSpec()
		if err != nil {
			return nil, fmt.Errorf("plan tools: %w", err)
		}
		specs = append(specs, s)
	}
	return specs, nil
}
