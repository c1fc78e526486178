package main

import (
	"encoding/json"
	"fmt"

	"github.com/benchkite/benchkite/generator/internal/explain"
	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/workloads"
)

// runExplain shows how one recipe resolves: what a person checks before
// merging a recipe PR.
func runExplain(c commonFlags, recipe string, asJSON bool, io cliutil.Streams, getenv func(string) string) error {
	profiles, cat, err := c.load(io.Stderr)
	if err != nil {
		return err
	}
	r, err := findRecipe(cat, recipe)
	if err != nil {
		return err
	}
	res, err := workloads.Resolve(r, profiles, getenv)
	if err != nil {
		return err
	}
	ex := explain.New(res, getenv)
	if asJSON {
		enc := json.NewEncoder(io.Stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		return enc.Encode(ex)
	}
	return ex.WriteText(io.Stdout)
}

// findRecipe matches a recipe by name, path, file name or stem. An invalid
// recipe is an error carrying its problems.
func findRecipe(cat *workloads.Catalog, want string) (*workloads.Recipe, error) {
	for _, r := range cat.Recipes {
		if selection.MatchesRecipe(r.Path, r.Name, want) {
			return r, nil
		}
	}
	for p, problems := range cat.Invalid {
		if selection.MatchesRecipe(p, "", want) {
			return nil, &cliutil.ExitError{Code: 1, Err: fmt.Errorf("%s is invalid:\n%s", p, problems.Error())}
		}
	}
	var names []string
	for _, r := range cat.Recipes {
		names = append(names, r.Name)
	}
	return nil, fmt.Errorf("no recipe %q in %s%s", want, cat.Dir, selection.CloseMatches(want, names))
}
