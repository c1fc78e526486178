package main

import (
	"errors"
	"fmt"

	"github.com/benchkite/benchkite/internal/cliutil"
)

// runLint validates every recipe: problems on stdout as path:line:col,
// warnings on stderr, nothing at all when clean.
func runLint(c commonFlags, io cliutil.Streams) error {
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
