package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/generator/internal/recipeimage"
	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/steps"
	"github.com/benchkite/benchkite/workloads"
)

// imageFailedStep stands in for a recipe whose image did not resolve: it
// fails on the CPU queue, under the recipe's own step key (so the report
// step and the history see the recipe failed), and no GPU is asked for.
// The registry's answer travels in an env var, never through a shell.
func imageFailedStep(name string, err error, queue string) steps.CommandStep {
	problems := err.Error() + "\nNo GPU step runs for this recipe; fix the image (VLLM_IMAGE, VLLM_COMMIT, the recipe's image) or push it, then rebuild."
	return failingStep(":warning: "+name+": "+recipeimage.Problem(err), contract.StepKey(name), "image not resolved", problems, queue)
}

// unpinnedRun is a selected recipe whose platform has no image in this
// build (workloads.ErrNoPlatformImage).
type unpinnedRun struct {
	recipe *workloads.Recipe
	err    error
}

// skipUnpinnedPlatforms takes out of sel the recipes whose platform the
// build pins no image for, and lists them among the skipped with why: a
// build that pins VLLM_IMAGE_CUDA only measures CUDA. Their steps are
// shown skipped, not dropped, so the build page says what did not run.
func skipUnpinnedPlatforms(sel *selection.Selection, profiles *agents.Set, getenv func(string) string) []unpinnedRun {
	if len(workloads.PlatformPins(getenv)) == 0 {
		return nil
	}
	var out []unpinnedRun
	kept := sel.Runs[:0]
	for _, run := range sel.Runs {
		_, err := workloads.Resolve(run.Recipe, profiles, getenv)
		if !errors.Is(err, workloads.ErrNoPlatformImage) {
			kept = append(kept, run)
			continue
		}
		out = append(out, unpinnedRun{recipe: run.Recipe, err: err})
		sel.Skipped = append(sel.Skipped, selection.Skipped{Name: run.Recipe.Name, Path: run.Recipe.Path, Reason: err.Error()})
		sel.Notes = append(sel.Notes, fmt.Sprintf("Skipped %s: %v", run.Recipe.Name, errors.Unwrap(err)))
	}
	sel.Runs = kept
	return out
}

// unpinnedStep is a recipe's step, skipped, with the variable that would
// run it as the reason.
func unpinnedStep(u unpinnedRun, profiles *agents.Set, queue string) steps.CommandStep {
	r := u.recipe
	reason := "no image in this build"
	label := r.Name
	if p, ok := profiles.Lookup(r.GPU); ok {
		reason = fmt.Sprintf("no %s image: set %s", p.Platform(), workloads.PlatformImageEnv(p.Platform()))
		label = strings.TrimSpace(p.Emoji + " " + r.Name)
	}
	return steps.CommandStep{
		Label:      label,
		Key:        contract.StepKey(r.Name),
		Commands:   []string{steps.PrintTextCommand("BENCHKITE_SKIP_TEXT")},
		Env:        map[string]string{"BENCHKITE_SKIP_TEXT": steps.TextValue(u.err.Error())},
		Agents:     cpuAgents(queue),
		Skip:       true,
		SkipReason: reason,
	}
}
