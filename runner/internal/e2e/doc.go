// Package e2e runs the runner binary end to end, as a real process, against
// the stand-ins under fakes/ (vLLM, lm_eval, BFCL's driver, docker,
// buildkite-agent and an OpenAI-compatible server): the fault drills, the
// cases that must not pass green, and the proof that plan lists what run
// starts. It has no code of its own outside its tests.
package e2e
