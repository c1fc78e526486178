// Package job is one run of one recipe inside its GPU job: New prepares it
// from the recipe and the runner's flags, Run goes through the phases
// (tools, serve, ready, bench, lm_eval, bfcl, gate, publish) and returns
// the result main turns into an exit code, and plan lists the processes
// Run starts, built from the same spec functions.
//
// One file per phase: tools.go, serve.go (and teardown; servespecs.go
// builds the server's commands, container.go keeps its containers apart,
// servercause.go says why it ended), bench.go, lmeval.go, bfcl.go,
// gate.go, publish.go. phase.go runs and records a phase, verdict.go
// prints how the run ended, buildkite.go is the job's door to Buildkite.
// env.go gives every child the environment of its role and nothing more.
package job
