// Package workloads is the recipe model: Load and Parse read recipes
// strictly (every problem of a file at path:line:col, in one pass),
// Resolve turns one into what a run needs (image, queue, serve argv, bench
// runs, lm_eval tasks, BFCL categories) for a GPU profile and a build's
// environment. Everything downstream takes a *Resolved, never the YAML.
package workloads
