// Command lm_eval is a stand-in for lm-evaluation-harness's CLI. It runs
// gsm8k, over an invented arithmetic dataset, against an OpenAI-compatible
// completions endpoint and writes results and samples files in the real
// layout. See the standins package documentation for the FAKE_LMEVAL_* knobs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/execlog"
	"github.com/benchkite/benchkite/runner/standins/procscan"
)

func main() {
	execlog.Record()
	procscan.Record()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
