// Package trend draws the nightly trend picture of a recipe: one SVG with a
// line chart per metric, stacked vertically, oldest night on the left and
// tonight highlighted.
//
// The output is plain SVG 1.1 (no scripts, no embedded fonts, generic
// sans-serif) so that Buildkite shows it as an artifact image in build
// annotations, and it is byte-for-byte deterministic for a given input so
// that it can be compared against golden files.
package trend
