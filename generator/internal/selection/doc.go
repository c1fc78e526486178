// Package selection decides which recipes a build runs, and why: the ones
// WORKLOADS names, the nightly set, or what a pull request changed since
// its merge base (PRChanges). Select is a pure function of the catalog,
// the build's environment and the changes.
package selection
