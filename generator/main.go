// Command generator turns the recipes in workloads/ into a Buildkite
// pipeline: it validates them, picks the ones a build should run and routes
// each to its GPU queue. See README.md for the modes and variables.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/benchkite/benchkite/internal/cliutil"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], cliutil.Streams{Stdout: os.Stdout, Stderr: os.Stderr}, os.Getenv)
	stop()
	os.Exit(code)
}
