// Command runner runs one recipe inside its GPU job: it serves the model,
// benchmarks it, measures its accuracy, judges the results and publishes
// them. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/benchkite/benchkite/internal/cliutil"
)

func main() {
	// Buildkite cancels a job with SIGTERM; the context carries it, as the
	// cause, to every phase, and cleanup runs on a context of its own.
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		if sig, ok := <-sigs; ok {
			cancel(signalError{sig})
		}
	}()
	code := run(ctx, os.Args[1:], cliutil.Streams{Stdout: os.Stdout, Stderr: os.Stderr}, os.Getenv, os.Environ())
	signal.Stop(sigs)
	os.Exit(code)
}
