// Package steps models Buildkite pipeline steps as Go values and writes them
// as the JSON that "buildkite-agent pipeline upload" reads.
//
// It knows nothing about recipes or GPUs: callers build a Pipeline of
// CommandStep, GroupStep and WaitStep values, check it with Validate, and
// write it with Marshal (deterministic JSON, keys sorted at every level) or
// MarshalForUpload (the same, with every "$" escaped so that the agent's
// upload-time interpolation leaves the text as written).
//
// Key turns arbitrary text into a valid step key. The steptest sub-package
// checks generated JSON against go-pipeline, the pipeline JSON schema and the
// real agent's "pipeline upload --dry-run".
package steps
