// Package bfcl runs the Berkeley Function Calling Leaderboard (bfcl-eval,
// pinned at workloads.BFCLVersion) against the runner's vLLM server, one run
// per category of a recipe's bfcl block.
//
// BFCL's CLI only runs models from its own registry, so a small Python
// driver (driver.py, embedded here and written next to the results at run
// time) registers the served model and calls bfcl_eval's generate and
// evaluate commands as Python functions. Everything that can be decided
// without bfcl_eval stays in Go: which leaves a group has, how many test
// entries each leaf gets when a category is subsampled, the env overrides,
// and reading the scores BFCL writes.
//
// A run of category c uses its own BFCL project root, <dir>/<c>, so no
// score of one run can be read as another's.
package bfcl
