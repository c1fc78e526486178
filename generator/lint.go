package main

import (
	"errors"
	"fmt"
)

// runLint validates every recipe: problems on stdout as path:line:col,
// warnings on stderr, nothing at all when clean.
func runLint(args []string, io ioStreams, getenv func(string) string) error {
	fs := newFlagSet("lint", io.Stderr)
	var c commonFlags
	c.register(fs, getenv)
	operands, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(operands) > 0 {
		return fmt.Errorf("%w: lint takes no arguments, got %q", errUsage, operands)
	}
	_, cat, err := c.load()
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
		return &exitError{code: 1, err: errors.New(plural(len(cat.Invalid), "invalid recipe file"))}
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}
