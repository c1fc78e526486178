package main

import (
	"errors"
	"fmt"

	"github.com/benchkite/benchkite/internal/cliutil"
)

// runLint validates every recipe: problems on stdout as path:line:col,
// warnings on stderr, nothing at all when clean.
func runLint(args []string, io cliutil.Streams, getenv func(string) string) error {
	fs := cliutil.NewFlagSet("lint", io.Stderr)
	var c commonFlags
	c.register(fs, getenv)
	operands, err := cliutil.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return fmt.Errorf("%w: lint takes no arguments, got %q", cliutil.ErrUsage, operands)
	}
	_, cat, err := c.load(io.Stderr)
	if err != nil {
		return err
	}
	for _, w := range cat.Warnings {
		fmt.Fprintln(io.Stderr, w.Error())
	}
	problems := cat.Problems()
	for _, p := range problems {
		fmt.Fprintln(io.Stdout, p.Error())
	}
	if len(problems) > 0 {
		return &cliutil.ExitError{Code: 1, Err: errors.New(plural(len(cat.Invalid), "invalid recipe file"))}
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
