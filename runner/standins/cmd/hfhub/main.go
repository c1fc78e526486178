// Command hfhub runs a command with HF_ENDPOINT set to the loopback Hub
// stand-in (package hfhub) serving a gsm8k-shaped "openai/gsm8k": the GPU
// self-test caches the set with it on a machine with no network, so that
// lm_eval's own gsm8k task loads it later with HF_HUB_OFFLINE=1.
//
//	hfhub [-train N] [-test N] COMMAND [ARG...]
//
// It exits as the command does. What the command asked for that the
// stand-in does not serve was answered 404, as the Hub answers for a file
// a repository lacks (datasets probes for several), and is listed on
// stderr.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/hfhub"
)

func main() {
	train := flag.Int("train", 10, "few-shot examples (the train split)")
	test := flag.Int("test", 40, "questions scored (the test split)")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: hfhub [-train N] [-test N] COMMAND [ARG...]")
		os.Exit(2)
	}
	if err := run(*train, *test, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "hfhub:", err)
		os.Exit(1)
	}
}

func run(train, test int, argv []string) error {
	repo, _ := hfhub.GSM8K(train, test)
	hub, err := hfhub.Start(repo)
	if err != nil {
		return err
	}
	defer hub.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "HF_ENDPOINT="+hub.URL())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err = cmd.Run()
	if unknown := hub.Unknown(); len(unknown) > 0 {
		fmt.Fprintf(os.Stderr, "hfhub: answered 404 (not served here): %q\n", unknown)
	}
	return err
}
