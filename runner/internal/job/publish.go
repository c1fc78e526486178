package job

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
	"github.com/benchkite/benchkite/runner/internal/buildlog"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/ingest"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/trend"
	"github.com/benchkite/benchkite/workloads"
)

// coveredByStep says whether the step's own artifact_paths already upload
// the results dir (the agent does that after the command), so the runner
// does not upload every file twice.
func coveredByStep(getenv func(string) string, dir string) bool {
	for _, p := range strings.Split(getenv("BUILDKITE_ARTIFACT_PATHS"), ";") {
		if strings.TrimSpace(p) == contract.ArtifactGlob(dir) {
			return true
		}
	}
	return false
}

// publishSpecs are the buildkite-agent calls that publish a run, run by
// the agent they return. A second cancel kills every other process at
// once; these carry what exists to the build and finish within its
// deadline.
func (j *Job) publishSpecs(style, body string, uploadArtifacts bool) ([]proc.Spec, buildkite.Agent, error) {
	bk, err := j.buildkite()
	if err != nil {
		return nil, buildkite.Agent{}, err
	}
	a := bk.Agent
	a.Spare, a.Log = true, j.log
	var specs []proc.Spec
	if uploadArtifacts {
		specs = append(specs, a.UploadSpec(contract.ArtifactGlob(j.dir)))
	}
	specs = append(specs, a.AnnotateSpec(j.res.Recipe.Name, style, "", body))
	return specs, a, nil
}

// publish uploads the results and annotates the build. It runs also after
// a failure or cancel, with whatever exists.
func (j *Job) publish(ctx context.Context) error {
	trend := j.writeTrend(ctx)
	// The body lives in memory and reaches the agent on stdin; the file
	// copy is best effort, so a read-only or full results directory still
	// gets its annotation.
	body := annotate.Render(j.sum, trend)
	if err := os.WriteFile(filepath.Join(j.dir, "annotation.md"), []byte(body), 0o644); err != nil {
		fmt.Fprintf(j.log, "runner: warning: keep a copy of the annotation: %v\n", err)
	}
	if !buildlog.InBuildkite(j.getenv) {
		fmt.Fprintf(j.log, "runner: not in a Buildkite job; results are in %s\n", j.dir)
		return nil
	}
	upload := !coveredByStep(j.getenv, j.dir)
	if !upload {
		fmt.Fprintf(j.log, "runner: the step's artifact_paths upload %s\n", contract.ArtifactGlob(j.dir))
	}
	var errs []error
	specs, agent, err := j.publishSpecs(gate.Style(j.sum), body, upload)
	if err != nil {
		return err
	}
	for _, spec := range specs {
		if err := agent.Run(ctx, spec); err != nil {
			errs = append(errs, err)
		}
	}
	j.ingest(ctx)
	return errors.Join(errs...)
}

// ingestTokenEnv holds the ingest token; without it the token is the
// secret Config.IngestSecret.
const ingestTokenEnv = "BENCHKITE_INGEST_TOKEN"

// ingest posts to the optional dashboard sinks; a failure only warns.
func (j *Job) ingest(ctx context.Context) {
	j.ingestPerfEval(ctx)
	if j.cfg.IngestURL == "" {
		return
	}
	if marks := ingest.OriginOf(j.sum).Marks; j.cfg.IngestNightlyOnly && len(marks) > 0 {
		fmt.Fprintf(j.log, "runner: not posted to %s: the run is %s (--ingest-nightly-only)\n", j.cfg.IngestURL, strings.Join(marks, ", "))
		return
	}
	bk, err := j.buildkite()
	if err != nil {
		fmt.Fprintf(j.log, "runner: warning: ingest skipped: %v\n", err)
		return
	}
	token, err := bk.Token(ctx, ingestTokenEnv, j.cfg.IngestSecret)
	if err != nil {
		fmt.Fprintf(j.log, "runner: warning: ingest skipped: %v\n", err)
		return
	}
	if err := ingest.Post(ctx, &http.Client{}, j.cfg.IngestURL, token, j.sum); err != nil {
		fmt.Fprintf(j.log, "runner: warning: %v\n", err)
		return
	}
	fmt.Fprintf(j.log, "runner: posted results to %s\n", j.cfg.IngestURL)
}

// writeTrend draws the recipe's recent nights next to tonight and returns
// the artifact path of the picture, or "" when there is no history.
func (j *Job) writeTrend(ctx context.Context) string {
	if len(j.sum.Bench) == 0 && len(j.sum.Accuracy) == 0 {
		return ""
	}
	history, err := j.history.Last(ctx, j.sum.Recipe, contract.TrendNights)
	if err != nil || len(history.Nights) == 0 {
		fmt.Fprintf(j.log, "runner: no trend picture: %v\n", orNoNights(err))
		return ""
	}
	panels := trendPanels(j.sum, history)
	path := filepath.Join(j.dir, "trend.svg")
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(j.log, "runner: trend picture: %v\n", err)
		return ""
	}
	defer f.Close()
	if err := trend.Render(f, j.sum.Recipe+": last nights and tonight", panels); err != nil {
		fmt.Fprintf(j.log, "runner: trend picture: %v\n", err)
		return ""
	}
	return filepath.ToSlash(path)
}

func orNoNights(err error) error {
	if err == nil {
		return errors.New("no past nights")
	}
	return err
}

// trendPanels are the output throughput per GPU of every bench run, the
// server's time to ready and the main score of every task, oldest night first with the nights whose job
// failed marked, tonight last and highlighted, and a line where the
// recipe last changed (a known change point: the nights before it are
// still compared).
func trendPanels(s summary.Summary, history baseline.Nights) []trend.Panel {
	var marks []trend.Mark
	if change, first := gate.RecipeChange(history, s.Fingerprint); change != "" {
		marks = []trend.Mark{{Index: first, Label: "recipe changed", Series: true}}
	}
	var pasts []summary.Summary
	var nights []trend.Point // each past night's label and whether it failed
	for i := len(history.Nights) - 1; i >= 0; i-- {
		n := history.Nights[i]
		pasts = append(pasts, n.Summary)
		nights = append(nights, trend.Point{Label: fmt.Sprintf("#%d", n.BuildNumber), Failed: n.Failed})
	}
	var panels []trend.Panel
	for _, run := range s.Bench {
		if run.Status != summary.StatusOK {
			continue
		}
		p := trend.Panel{Title: run.Name + " output throughput per GPU", Unit: "tok/s", HigherIsBetter: true, Marks: marks}
		for i, ps := range pasts {
			v := math.NaN()
			for _, b := range ps.Bench {
				if b.Name == run.Name && b.Status == summary.StatusOK {
					v = b.OutputThroughputPerGPU
				}
			}
			pt := nights[i]
			pt.Value = v
			p.Points = append(p.Points, pt)
		}
		p.Points = append(p.Points, trend.Point{Label: "tonight", Value: run.OutputThroughputPerGPU, Highlight: true})
		panels = append(panels, p)
	}
	if s.Startup != nil && s.Startup.ReadySeconds > 0 {
		// The server's time to ready: what every night pays before it
		// measures anything.
		p := trend.Panel{Title: "server time to ready", Unit: "s", Marks: marks}
		for i, ps := range pasts {
			v := math.NaN()
			if ps.Startup != nil && ps.Startup.ReadySeconds > 0 {
				v = ps.Startup.ReadySeconds
			}
			pt := nights[i]
			pt.Value = v
			p.Points = append(p.Points, pt)
		}
		p.Points = append(p.Points, trend.Point{Label: "tonight", Value: s.Startup.ReadySeconds, Highlight: true})
		panels = append(panels, p)
	}
	for _, t := range s.Accuracy {
		metric := ""
		for _, k := range []string{"exact_match,flexible-extract", "exact_match,strict-match", workloads.BFCLMetric} {
			if _, ok := t.Metrics[k]; ok {
				metric = k
				break
			}
		}
		if metric == "" {
			continue
		}
		p := trend.Panel{Title: t.Task + " " + metric, HigherIsBetter: true, Marks: marks}
		for i, ps := range pasts {
			v := math.NaN()
			for _, a := range ps.Accuracy {
				if a.Task == t.Task {
					if x, ok := a.Metrics[metric]; ok {
						v = x
					}
				}
			}
			pt := nights[i]
			pt.Value = v
			p.Points = append(p.Points, pt)
		}
		p.Points = append(p.Points, trend.Point{Label: "tonight", Value: t.Metrics[metric], Highlight: true})
		panels = append(panels, p)
	}
	return panels
}

// ingestPerfEval posts to perf-eval's dashboards in their shape: a team
// switching keeps its rows. The token is INGEST_BEARER_TOKEN (or
// BENCHKITE_INGEST_TOKEN), else the Buildkite secret.
func (j *Job) ingestPerfEval(ctx context.Context) {
	if !j.cfg.IngestPerfEval {
		return
	}
	c := j.cfg
	if marks := ingest.OriginOf(j.sum).Marks; c.IngestNightlyOnly && len(marks) > 0 {
		fmt.Fprintf(j.log, "runner: not posted to perf-eval's dashboards: the run is %s (--ingest-nightly-only)\n", strings.Join(marks, ", "))
		return
	}
	bk, err := j.buildkite()
	if err != nil {
		fmt.Fprintf(j.log, "runner: warning: perf-eval ingest skipped: %v\n", err)
		return
	}
	token, err := bk.Token(ctx, ingestTokenEnv, "")
	if err != nil {
		token, err = bk.Token(ctx, ingest.PerfEvalTokenName, c.IngestSecret)
	}
	if err != nil {
		fmt.Fprintf(j.log, "runner: warning: perf-eval ingest skipped: %v\n", err)
		return
	}
	sink := &ingest.PerfEvalSink{PerfURL: c.IngestPerfURL, EvalURL: c.IngestEvalURL, Token: token, Client: &http.Client{}, Dir: j.dir, Getenv: j.getenv, NoSamples: c.IngestNoSamples}
	n, err := sink.Post(ctx, j.sum)
	if err != nil {
		fmt.Fprintf(j.log, "runner: warning: perf-eval ingest: %v\n", err)
	}
	fmt.Fprintf(j.log, "runner: posted %d record(s) to %s and %s\n", n, c.IngestPerfURL, c.IngestEvalURL)
}
