// Package buildlog writes the markers that Buildkite turns into collapsible
// groups in a job log.
//
// A line starting with "--- " opens a collapsed group, "+++ " an expanded
// one, and "^^^ +++" expands the group before it (used when a step in that
// group failed).
package buildlog

import (
	"fmt"
	"io"
	"strings"
)

// Section opens a collapsed log group titled title.
func Section(w io.Writer, title string) {
	fmt.Fprintf(w, "--- %s\n", oneLine(title))
}

// ExpandPrevious makes the group before this line show expanded, so a
// failure inside a collapsed group is visible without a click.
func ExpandPrevious(w io.Writer) {
	io.WriteString(w, "^^^ +++\n")
}

// oneLine keeps a title from breaking the marker line: a newline in it
// would end the marker and print the rest as plain log text.
func oneLine(title string) string {
	return strings.Join(strings.Fields(title), " ")
}

// InBuildkite says whether the process runs in a Buildkite job it can
// publish to: a job ID and the agent's access token are both set.
func InBuildkite(getenv func(string) string) bool {
	return getenv("BUILDKITE_JOB_ID") != "" && getenv("BUILDKITE_AGENT_ACCESS_TOKEN") != ""
}
