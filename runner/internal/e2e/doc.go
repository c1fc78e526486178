// Package e2e runs the runner binary end to end, as a real process, against
// the stand-ins: the programs of runner/standins (vLLM, lm_eval, docker,
// buildkite-agent, aiperf) and, under fakes/, an OpenAI-compatible server,
// the Hub's dataset endpoints and Buildkite's agent API. It holds the fault
// drills, the cases that must not pass green, and the proof that plan lists
// what run starts. It has no code of its own outside its tests.
package e2e
