package main

import (
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/generator/internal/recipeimage"
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

// unpinnedStep is a recipe's step, skipped, with the variable that would
// run it as the reason.
func unpinnedStep(u recipeimage.Unpinned, profiles *agents.Set, queue string) steps.CommandStep {
	r := u.Recipe
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
		Env:        map[string]string{"BENCHKITE_SKIP_TEXT": steps.TextValue(u.Err.Error())},
		Agents:     cpuAgents(queue),
		Skip:       true,
		SkipReason: reason,
	}
}
