// Package needs says which past nights a build compares with, the
// history step's one fetch for all its GPU jobs.
package needs

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/workloads"
)

// Of lists the past nights the build compares with: every
// selected recipe's own (enough for its regression gates and its trend
// picture) and the nights of every recipe a baseline_from names, among
// which the gate looks for one that ran tonight's image, with the lm_eval
// tasks of those gates, whose per-question outcomes the paired test needs.
func Of(sel *selection.Selection) []contract.Need {
	var out []contract.Need
	at := map[string]int{}
	need := func(recipe string, nights int) {
		if i, ok := at[recipe]; ok {
			out[i].Nights = max(out[i].Nights, nights)
			return
		}
		at[recipe] = len(out)
		out = append(out, contract.Need{Recipe: recipe, Nights: nights})
	}
	for _, run := range sel.Runs {
		r := run.Recipe
		nights := contract.TrendNights
		if r.Bench != nil {
			for i := range r.Bench.Configs {
				if p := r.Bench.RegressionFor(&r.Bench.Configs[i]); p != nil {
					nights = max(nights, p.Nights)
				}
			}
		}
		need(r.Name, nights)
	}
	for _, run := range sel.Runs {
		for _, e := range expectations(run.Recipe) {
			if e.BaselineFrom != "" {
				need(e.BaselineFrom, contract.TrendNights)
			}
		}
		if run.Recipe.LMEval == nil {
			continue
		}
		for _, t := range run.Recipe.LMEval.Tasks {
			for _, e := range t.Expect {
				if e.BaselineFrom == "" {
					continue
				}
				n := &out[at[e.BaselineFrom]]
				if !slices.Contains(n.Samples, t.Name) {
					n.Samples = append(n.Samples, t.Name)
				}
			}
		}
	}
	return out
}

// expectations are the recipe's accuracy gates, lm_eval's and BFCL's.
func expectations(r *workloads.Recipe) []workloads.Expectation {
	var out []workloads.Expectation
	if r.LMEval != nil {
		for _, t := range r.LMEval.Tasks {
			out = append(out, t.Expect...)
		}
	}
	if r.BFCL != nil {
		for _, g := range r.BFCL.Gates {
			out = append(out, g.Expect)
		}
	}
	return out
}

// CheckPath says whether path can name the needs artifact: relative,
// inside the working directory, as an artifact path is.
func CheckPath(path string) error {
	if path == "" {
		return nil
	}
	if filepath.IsAbs(path) || !filepath.IsLocal(path) || strings.ContainsAny(path, "*?[\\") {
		return fmt.Errorf("--history-needs %q: want a relative path inside the working directory, as buildkite-agent artifact upload names it", path)
	}
	return nil
}
