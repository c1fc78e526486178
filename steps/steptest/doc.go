// Package steptest checks generated Buildkite pipeline JSON in tests: that
// go-pipeline parses it, that it is valid against Buildkite's pipeline JSON
// schema, and that the real "buildkite-agent pipeline upload --dry-run"
// reads it as meaning what it says.
//
// The schema is read from the reference corpus ($BENCHKITE_REFERENCE_DIR;
// unset, the schema check is skipped, saying so), and the agent from
// $BUILDKITE_AGENT_BIN or <module root>/bin/buildkite-agent ("make agent"
// builds it; missing, the test fails if CI=true and is skipped otherwise).
package steptest
