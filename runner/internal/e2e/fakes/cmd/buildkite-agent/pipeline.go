package main

import (
	"fmt"
	"os"
	"path/filepath"
)

var pipelineUploadCommand = command{
	valueFlags: []string{"format", "job", "jwks-file", "jwks-key-id", "signing-aws-kms-key", "signing-gcp-kms-key",
		"git-diff-base", "changed-files-path"},
	boolFlags: []string{"dry-run", "no-interpolation", "replace", "reject-secrets", "reject-parse-warnings",
		"apply-if-changed", "fetch-diff-base"},
	readsStdin: func(f flags) bool { return len(f.args) == 0 },
	run:        pipelineUpload,
}

// pipelineUpload records the pipeline; --dry-run echoes it unchanged (the
// real agent re-emits it normalised), and FAKE_AGENT_PIPELINES keeps a
// numbered copy of each upload.
func pipelineUpload(a *agent, f flags, stdin string) error {
	contents := []string{stdin}
	if len(f.args) > 0 {
		contents = nil
		for _, name := range f.args {
			if !filepath.IsAbs(name) {
				name = filepath.Join(a.dir, name)
			}
			data, err := os.ReadFile(name)
			if err != nil {
				return fmt.Errorf("read pipeline: %w", err)
			}
			contents = append(contents, string(data))
		}
	}
	if f.bools["dry-run"] {
		for _, c := range contents {
			fmt.Fprint(a.stdout, c)
		}
		return nil
	}
	dir := a.getenv(envPipelines)
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store pipeline: %w", err)
	}
	existing, err := filepath.Glob(filepath.Join(dir, "pipeline-*.yml"))
	if err != nil {
		return fmt.Errorf("store pipeline: %w", err)
	}
	for i, c := range contents {
		name := filepath.Join(dir, fmt.Sprintf("pipeline-%03d.yml", len(existing)+i+1))
		if err := os.WriteFile(name, []byte(c), 0o644); err != nil {
			return fmt.Errorf("store pipeline: %w", err)
		}
	}
	fmt.Fprintln(a.stderr, "Successfully uploaded and parsed pipeline config")
	return nil
}
