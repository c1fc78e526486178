package main

import (
	"github.com/benchkite/benchkite/generator/internal/recipeimage"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/steps"
)

// imageFailedStep stands in for a recipe whose image did not resolve: it
// fails on the CPU queue, under the recipe's own step key (so the report
// step and the history see the recipe failed), and no GPU is asked for.
// The registry's answer travels in an env var, never through a shell.
func imageFailedStep(name string, err error, queue string) steps.CommandStep {
	problems := err.Error() + "\nNo GPU step runs for this recipe; fix the image (VLLM_IMAGE, VLLM_COMMIT, the recipe's image) or push it, then rebuild."
	return failingStep(":warning: "+name+": "+recipeimage.Problem(err), contract.StepKey(name), "image not resolved", problems, queue)
}
