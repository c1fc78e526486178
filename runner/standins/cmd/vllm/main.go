// Command vllm is a stand-in for the vllm CLI: "vllm serve" runs the fake
// OpenAI-compatible server and "vllm bench serve" benchmarks a server over
// HTTP and writes a real result file. See the standins package documentation
// for the FAKE_VLLM_* knobs.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/execlog"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/openai"
	"github.com/benchkite/benchkite/runner/standins/procscan"
)

func main() {
	// The engine process of a `vllm serve`: no command anyone ran, so
	// not in the exec log.
	if mode := os.Getenv(envEngineRole); mode != "" {
		os.Exit(runEngine(mode))
	}
	// Before anything else: a SIGTERM that arrived while the start log
	// was written would end a server that is meant to ignore it.
	ignore, _ := strconv.ParseBool(os.Getenv(envIgnoreSIGTERM))
	if ignore {
		// Lets tests check that callers escalate to SIGKILL.
		signal.Ignore(syscall.SIGTERM)
	}
	execlog.Record()
	procscan.Record()
	signals := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if ignore {
		signals = signals[:1]
	}
	ctx, stop := signal.NotifyContext(context.Background(), signals...)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const topUsage = "usage: vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ..."

// run dispatches the subcommand and returns the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, topUsage)
		return 2
	}
	switch args[0] {
	case "-v", "--version":
		fmt.Fprintln(stdout, openai.Version)
		return 0
	case "-h", "--help":
		fmt.Fprintln(stdout, topUsage)
		return 0
	case "serve":
		return runServe(ctx, args[1:], getenv, stdout, stderr)
	case "bench":
		if len(args) < 2 || args[1] != "serve" {
			fmt.Fprintf(stderr, "usage: vllm bench [-h] {serve} ...\nvllm bench: error: argument bench_type: invalid choice: '%s' (choose from 'serve')\n", at(args, 1))
			return 2
		}
		return runBench(ctx, args[2:], getenv, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "%s\nvllm: error: argument subparser: invalid choice: '%s' (choose from 'chat', 'complete', 'serve', 'bench', 'collect-env', 'run-batch')\n", topUsage, args[0])
		return 2
	}
}

func at(args []string, i int) string {
	if i < len(args) {
		return args[i]
	}
	return ""
}
