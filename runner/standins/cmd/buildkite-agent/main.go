// Command buildkite-agent is a recording stand-in for the Buildkite agent
// CLI as used inside a job: every invocation is appended to a JSON-lines
// log, artifacts are copied to a directory, annotations become files,
// secrets come from the environment. See the
// standins package documentation for the FAKE_AGENT_* knobs.
package main

import (
	"os"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/execlog"
)

func main() {
	execlog.Record()
	dir, err := os.Getwd()
	if err != nil {
		dir = "."
	}
	a := &agent{getenv: os.Getenv, environ: os.Environ(), stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, dir: dir}
	os.Exit(a.run(os.Args[1:]))
}
