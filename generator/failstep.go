package main

import (
	"fmt"

	"github.com/benchkite/benchkite/steps"
	"github.com/benchkite/benchkite/workloads"
)

// failingStep fails on the CPU queue after printing problems. The text
// travels in an env var as a steps.TextValue: the shell only expands the
// variable, so nothing in a recipe (quotes, $(...), newlines) is ever
// evaluated, and upload interpolation cannot change it, whatever it holds.
func failingStep(label, key, heading, problems, queue string) steps.CommandStep {
	return steps.CommandStep{
		Label: steps.LabelText(label),
		Key:   key,
		Commands: []string{
			fmt.Sprintf("echo '+++ :warning: %s'", heading),
			steps.PrintTextCommand("BENCHKITE_PROBLEMS") + " >&2",
			"exit 1",
		},
		Env:    map[string]string{"BENCHKITE_PROBLEMS": steps.TextValue(problems)},
		Agents: cpuAgents(queue),
	}
}

// uncarriableStep stands in for the step of recipe r, under the same key
// so that the report still waits on it, when some of the recipe's text
// (its file name, say) cannot pass through upload interpolation unchanged.
func uncarriableStep(r *workloads.Recipe, key string, err error, queue string) steps.CommandStep {
	problems := fmt.Sprintf("%s: this recipe's step cannot be uploaded: %v\n"+
		"buildkite-agent pipeline upload reads a backslash before \"$\" as an escape; rename the file or reword the text", r.Path, err)
	return failingStep(":warning: recipe "+r.Name+" cannot be uploaded", key, "recipe cannot be uploaded", problems, queue)
}
