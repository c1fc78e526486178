// Package steps models Buildkite pipeline steps as Go values and writes the
// JSON that "buildkite-agent pipeline upload" reads. It knows nothing about
// recipes or GPUs.
//
// Build a Pipeline of CommandStep, GroupStep and WaitStep values, check it
// with Validate, and write it with Marshal (deterministic, keys sorted) or
// MarshalForUpload (the same with every "$" escaped, so the agent's
// upload-time interpolation leaves the text as written). Key turns any text
// into a valid step key; package steptest checks the JSON in tests.
package steps
