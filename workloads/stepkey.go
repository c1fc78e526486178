package workloads

// StepKey is the Buildkite step key of a recipe's GPU job. The generator
// sets it and baselines find a recipe's past results by it. Recipe names
// only hold characters step keys allow, so no escaping is needed.
func StepKey(recipeName string) string { return "recipe:" + recipeName }
