package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Environment knobs for what other steps of the build hold.
const (
	// envStepArtifacts is a directory of <step key>/<artifact path>: the
	// artifacts other steps have uploaded so far.
	envStepArtifacts = "FAKE_AGENT_STEP_ARTIFACTS"
	// envStepStates is a directory of <step key> files, each holding the
	// step's state ("running", "finished", ...).
	envStepStates = "FAKE_AGENT_STEP_STATES"
)

var artifactDownloadCommand = command{
	valueFlags: []string{"step", "build"},
	boolFlags:  []string{"include-retried-jobs", "no-s3-multipart-download"},
	run:        artifactDownload,
}

// artifactDownload copies the artifact at the query path from the step's
// uploads to the destination directory, path kept, as the agent does;
// none there is the agent's "no artifacts found for downloading".
func artifactDownload(a *agent, f flags, _ string) error {
	if len(f.args) != 2 {
		return errors.New("usage: buildkite-agent artifact download <query> <destination>")
	}
	query, dest := f.args[0], f.args[1]
	if strings.ContainsAny(query, "*?[") {
		return errUnsupported("artifact download of a glob")
	}
	step := f.value("step", "")
	if step == "" {
		return errUnsupported("artifact download without --step")
	}
	src := filepath.Join(a.getenv(envStepArtifacts), step, filepath.FromSlash(query))
	if a.getenv(envStepArtifacts) == "" {
		src = ""
	}
	if _, err := os.Stat(src); src == "" || err != nil {
		return errors.New("failed to download artifacts: no artifacts found for downloading")
	}
	if !filepath.IsAbs(dest) {
		dest = filepath.Join(a.dir, dest)
	}
	fmt.Fprintf(a.stderr, "Downloading 1 artifacts to %s\n", f.args[1])
	return copyFile(src, filepath.Join(dest, filepath.FromSlash(query)))
}

var stepGetCommand = command{
	valueFlags: []string{"step", "build", "format"},
	run:        stepGet,
}

// stepGet answers `step get state --step KEY` from FAKE_AGENT_STEP_STATES;
// other attributes are not the runner's business.
func stepGet(a *agent, f flags, _ string) error {
	if len(f.args) != 1 || f.args[0] != "state" {
		return errUnsupported(fmt.Sprintf("step get %q", f.args))
	}
	step := f.value("step", "")
	if step == "" {
		return errors.New("--step is required")
	}
	dir := a.getenv(envStepStates)
	state, err := os.ReadFile(filepath.Join(dir, step))
	if dir == "" || err != nil {
		return fmt.Errorf("failed to get step: no step with key %q in this build", step)
	}
	_, err = fmt.Fprintln(a.stdout, strings.TrimSpace(string(state)))
	return err
}
