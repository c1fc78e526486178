package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// maxAnnotationBody is the agent's client-side limit.
const maxAnnotationBody = 1024 * 1024

var annotateCommand = command{
	valueFlags: []string{"context", "style", "priority", "scope", "job", "redacted-vars"},
	boolFlags:  []string{"append"},
	readsStdin: func(f flags) bool { return len(f.args) == 0 },
	run:        annotate,
}

func (a *agent) context(f flags) string {
	ctx := f.value("context", a.getenv("BUILDKITE_ANNOTATION_CONTEXT"))
	if ctx == "" {
		return "default"
	}
	return ctx
}

// annotate writes the body to FAKE_AGENT_ANNOTATIONS/<context>.md (and the
// style to <context>.style), replacing it like the real API.
func annotate(a *agent, f flags, stdin string) error {
	body := stdin
	if len(f.args) > 0 {
		body = f.args[0]
	}
	style := f.value("style", a.getenv("BUILDKITE_ANNOTATION_STYLE"))
	ctx := a.context(f)
	switch {
	case f.bools["append"] || a.getenv("BUILDKITE_ANNOTATION_APPEND") == "true":
		return errUnsupported("annotate --append")
	case len(ctx) > 100:
		return fmt.Errorf("annotation context %q is longer than 100 characters", ctx)
	case style != "" && !slices.Contains([]string{"success", "info", "warning", "error"}, style):
		return fmt.Errorf("invalid annotation style %q: must be one of success, info, warning, error", style)
	case len(body) > maxAnnotationBody:
		return fmt.Errorf("annotation body size (%d bytes) exceeds maximum (%d bytes)", len(body), maxAnnotationBody)
	}
	// The agent parses --priority (or its env) as a whole number, as its
	// CLI library does; Buildkite shows 1 to 10.
	if p := f.value("priority", a.getenv("BUILDKITE_ANNOTATION_PRIORITY")); p != "" {
		n, err := strconv.ParseInt(p, 0, 64)
		if err != nil {
			return fmt.Errorf("invalid value %q for flag -priority: %w", p, err)
		}
		if n < 1 || n > 10 {
			return fmt.Errorf("invalid annotation priority %d: must be 1 to 10", n)
		}
	}
	dir := a.getenv(envAnnotations)
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create annotations dir: %w", err)
	}
	base := filepath.Join(dir, annotationFile(ctx))
	if style != "" {
		if err := os.WriteFile(base+".style", []byte(style), 0o644); err != nil {
			return fmt.Errorf("write annotation style: %w", err)
		}
	}
	if body == "" && style != "" {
		return nil // only the style changes
	}
	if err := os.WriteFile(base+".md", []byte(body), 0o644); err != nil {
		return fmt.Errorf("write annotation: %w", err)
	}
	fmt.Fprintf(a.stderr, "Successfully annotated build\n")
	return nil
}

// annotationFile keeps a context usable as a file name.
func annotationFile(ctx string) string {
	return strings.NewReplacer("/", "_", `\`, "_").Replace(ctx)
}
