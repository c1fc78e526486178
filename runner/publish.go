package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/trend"
)

// inBuildkite says whether there is a job to publish to.
func inBuildkite(getenv func(string) string) bool {
	return getenv("BUILDKITE_JOB_ID") != "" && getenv("BUILDKITE_AGENT_ACCESS_TOKEN") != ""
}

// artifactGlob is what the job uploads: everything under the results dir.
func artifactGlob(dir string) string { return filepath.ToSlash(dir) + "/**/*" }

// coveredByStep says whether the step's own artifact_paths already upload
// the results dir (the agent does that after the command), so the runner
// does not upload every file twice.
func coveredByStep(getenv func(string) string, dir string) bool {
	for _, p := range strings.Split(getenv("BUILDKITE_ARTIFACT_PATHS"), ";") {
		if strings.TrimSpace(p) == artifactGlob(dir) {
			return true
		}
	}
	return false
}

// publishSpecs are the buildkite-agent calls that publish a run.
func publishSpecs(dir, context, style string, environ []string, uploadArtifacts bool) []proc.Spec {
	var specs []proc.Spec
	if uploadArtifacts {
		specs = append(specs, proc.Spec{Argv: []string{"buildkite-agent", "artifact", "upload", artifactGlob(dir)}, Env: environ})
	}
	specs = append(specs, proc.Spec{Argv: []string{"buildkite-agent", "annotate", "--context", context, "--style", style}, Env: environ})
	return specs
}

// publish uploads the results and annotates the build. It runs also after
// a failure or cancel, with whatever exists.
func (j *job) publish(ctx context.Context) error {
	trend := j.writeTrend(ctx)
	body := renderAnnotation(j.sum, trend)
	if err := os.WriteFile(filepath.Join(j.dir, "annotation.md"), []byte(body), 0o644); err != nil {
		return fmt.Errorf("write annotation: %w", err)
	}
	if !inBuildkite(j.getenv) {
		fmt.Fprintf(j.log, "runner: not in a Buildkite job; results are in %s\n", j.dir)
		return nil
	}
	upload := !coveredByStep(j.getenv, j.dir)
	if !upload {
		fmt.Fprintf(j.log, "runner: the step's artifact_paths upload %s\n", artifactGlob(j.dir))
	}
	var errs []error
	for _, spec := range publishSpecs(j.dir, j.res.Recipe.Name, annotationStyle(j.sum), j.environ, upload) {
		spec.Stdout, spec.Stderr = j.log, j.log
		if spec.Argv[1] == "annotate" {
			spec.Stdin = strings.NewReader(body)
		}
		fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(spec.Argv))
		if err := j.procs.Run(ctx, spec); err != nil {
			errs = append(errs, err)
		}
	}
	j.ingest(ctx)
	return errors.Join(errs...)
}

// ingest posts to the optional dashboard sink; a failure only warns.
func (j *job) ingest(ctx context.Context) {
	if j.cfg.ingestURL == "" {
		return
	}
	token, err := bkapi.TokenFromEnvOrSecret(ctx, j.getenv, secretGetter(j.procs, j.environ), "BENCHKITE_INGEST_TOKEN", j.cfg.ingestSecret)
	if err != nil {
		fmt.Fprintf(j.log, "runner: warning: ingest skipped: %v\n", err)
		return
	}
	if err := ingest(ctx, &http.Client{}, j.cfg.ingestURL, token, j.sum); err != nil {
		fmt.Fprintf(j.log, "runner: warning: %v\n", err)
		return
	}
	fmt.Fprintf(j.log, "runner: posted results to %s\n", j.cfg.ingestURL)
}

// trendNights is how many past nights the trend picture shows.
const trendNights = 10

// writeTrend draws the recipe's recent nights next to tonight and returns
// the artifact path of the picture, or "" when there is no history.
func (j *job) writeTrend(ctx context.Context) string {
	if len(j.sum.Bench) == 0 && len(j.sum.Accuracy) == 0 {
		return ""
	}
	history, err := j.gates.nights(ctx, j.sum.Recipe, trendNights)
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

// trendPanels: output throughput per GPU of every bench run and the main
// score of every task, oldest night first, tonight last and highlighted.
func trendPanels(s summary.Summary, history baseline.Result) []trend.Panel {
	var pasts []summary.Summary
	var labels []string
	for i := len(history.Nights) - 1; i >= 0; i-- {
		n := history.Nights[i]
		ps, err := summary.Read(strings.NewReader(string(n.Summary)))
		if err != nil {
			continue
		}
		pasts = append(pasts, ps)
		labels = append(labels, fmt.Sprintf("#%d", n.BuildNumber))
	}
	var panels []trend.Panel
	for _, run := range s.Bench {
		if run.Status != summary.StatusOK {
			continue
		}
		p := trend.Panel{Title: run.Name + " output throughput per GPU", Unit: "tok/s", HigherIsBetter: true}
		for i, ps := range pasts {
			v := math.NaN()
			for _, b := range ps.Bench {
				if b.Name == run.Name && b.Status == summary.StatusOK {
					v = b.OutputThroughputPerGPU
				}
			}
			p.Points = append(p.Points, trend.Point{Label: labels[i], Value: v})
		}
		p.Points = append(p.Points, trend.Point{Label: "tonight", Value: run.OutputThroughputPerGPU, Highlight: true})
		panels = append(panels, p)
	}
	for _, t := range s.Accuracy {
		metric := ""
		for _, k := range []string{"exact_match,flexible-extract", "exact_match,strict-match"} {
			if _, ok := t.Metrics[k]; ok {
				metric = k
				break
			}
		}
		if metric == "" {
			continue
		}
		p := trend.Panel{Title: t.Task + " " + metric, HigherIsBetter: true}
		for i, ps := range pasts {
			v := math.NaN()
			for _, a := range ps.Accuracy {
				if a.Task == t.Task {
					if x, ok := a.Metrics[metric]; ok {
						v = x
					}
				}
			}
			p.Points = append(p.Points, trend.Point{Label: labels[i], Value: v})
		}
		p.Points = append(p.Points, trend.Point{Label: "tonight", Value: t.Metrics[metric], Highlight: true})
		panels = append(panels, p)
	}
	return panels
}
