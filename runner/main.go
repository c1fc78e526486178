// Command runner runs one recipe inside its GPU job: it serves the model,
// benchmarks it, measures its accuracy, judges the results and publishes
// them. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// Buildkite cancels a job with SIGTERM; the context carries it to every
	// phase, and cleanup runs on a context of its own.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], streams{Stdout: os.Stdout, Stderr: os.Stderr}, os.Getenv, os.Environ())
	stop()
	os.Exit(code)
}
