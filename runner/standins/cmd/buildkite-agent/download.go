package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// envDownloads names the directory artifact download serves from: one
// folder per step key, holding that step's artifacts under their paths.
const envDownloads = "FAKE_AGENT_DOWNLOADS"

var artifactDownloadCommand = command{
	valueFlags: []string{"step", "build"},
	boolFlags:  []string{"include-retried-jobs"},
	run:        artifactDownload,
}

// artifactDownload copies the artifacts of --step matching the query into
// the destination, their paths kept, without their mode bits (the real
// agent writes files 0644, so a binary needs chmod +x). No match fails as
// the agent does.
func artifactDownload(a *agent, f flags, _ string) error {
	if len(f.args) != 2 {
		return errors.New("missing arguments: buildkite-agent artifact download <query> <destination>")
	}
	query, dest := f.args[0], f.args[1]
	step := f.value("step", "")
	if step == "" {
		return errUnsupported("artifact download without --step")
	}
	root := a.getenv(envDownloads)
	if root == "" {
		return errors.New("failed to download artifacts: No artifacts found for downloading")
	}
	stepDir := filepath.Join(root, strings.NewReplacer("/", "_", ":", "_").Replace(step))
	b := &agent{getenv: a.getenv, stderr: a.stderr, dir: stepDir}
	matched, err := b.resolve(query)
	if err != nil {
		return err
	}
	if len(matched) == 0 {
		return errors.New("failed to download artifacts: No artifacts found for downloading")
	}
	if !filepath.IsAbs(dest) {
		dest = filepath.Join(a.dir, dest)
	}
	for _, rel := range matched {
		fmt.Fprintf(a.stderr, "Downloading artifact %s\n", rel)
		if err := copyPlain(filepath.Join(stepDir, rel), filepath.Join(dest, filepath.FromSlash(rel))); err != nil {
			return err
		}
	}
	return nil
}

// copyPlain copies src to dst, creating dst 0644.
func copyPlain(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("download artifact: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("download artifact: %w", err)
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("download artifact: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("download artifact: %w", err)
	}
	return out.Close()
}

// envStepStates is a directory of <step key> files, each holding the
// step's state ("running", "finished", ...).
const envStepStates = "FAKE_AGENT_STEP_STATES"

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
