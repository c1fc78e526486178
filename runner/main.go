// Command runner runs one recipe inside its GPU job: it serves the model,
// benchmarks it, measures its accuracy, judges the results and publishes
// them. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/runner/internal/cancel"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/secrets"
)

func main() {
	// Tokens leave the process image before anything else runs: a child
	// of the runner's uid could read them from /proc/<pid>/environ.
	env, err := secrets.Start(os.Args, os.Environ())
	if err != nil {
		fmt.Fprintf(os.Stderr, "runner: %v\n", err)
		os.Exit(1)
	}
	// Buildkite cancels a job with SIGTERM; the context carries it, as the
	// cause, to every phase, and cleanup runs on a context of its own.
	// Processes that lose their parent (vLLM's engines) become the
	// runner's, so teardown can end them.
	if err := proc.BecomeSubreaper(); err != nil {
		fmt.Fprintf(os.Stderr, "runner: warning: %v; orphaned grandchildren may outlive the run\n", err)
	}
	ctx, stop := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, os.Args[1:], cliutil.Streams{Stdout: os.Stdout, Stderr: os.Stderr}, env.Getenv, env.Environ())
	}()
	code := cancel.New(stop, os.Stderr).Wait(sigs, done)
	signal.Stop(sigs)
	os.Exit(code)
}
