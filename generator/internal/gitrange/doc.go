// Package gitrange finds where a pull request forked from its base branch,
// in checkouts that hold only part of the history.
//
// CI agents often clone with --depth 1 and only the PR's branch. The merge
// base is then not in the clone at all, and fetching the base branch alone
// does not help: the PR's own history still stops at its tip. Guessing
// instead (running every recipe) costs hours of GPUs for a checkout detail,
// so this package deepens both histories in bounded steps, then fetches
// everything, and only then gives up with an error that says what git
// answered.
package gitrange
