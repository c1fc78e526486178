package steps

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Pipeline is one document for "buildkite-agent pipeline upload".
type Pipeline struct {
	// Env is set for every job of the upload.
	Env   map[string]string
	Steps []Step
}

// Step is one of CommandStep, GroupStep or WaitStep. The set is closed so
// that Marshal and Validate can handle every kind.
type Step interface {
	isStep()
}

// Marshal validates p and returns it as indented JSON with a trailing
// newline.
//
// The output is deterministic: object keys are sorted at every level (as
// encoding/json sorts map keys, and as Buildkite's own tools print
// pipelines), zero-valued attributes are omitted and HTML characters are not
// escaped. Strings are written as given: "$" is not escaped, so the agent's
// upload-time interpolation applies to them; see MarshalForUpload.
func Marshal(p Pipeline) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("marshalling pipeline: %w", err)
	}
	return encode(p.value())
}

// MarshalForUpload is Marshal with every string of the document, object
// keys included, passed through EscapeInterpolation. The agent interpolates
// all of them at upload time, so this is the form whose commands, env and
// labels reach the job exactly as they were written in p.
//
// It fails with ErrUnescapable when a string holds an odd run of
// backslashes right before a "$", which interpolation cannot leave intact.
func MarshalForUpload(p Pipeline) ([]byte, error) {
	b, err := Marshal(p)
	if err != nil {
		return nil, err
	}
	return escapeForUpload(b)
}

// MarshalUploads is MarshalForUpload for a build that may need several
// uploads: p is cut by Split and each upload marshalled in order. A
// pipeline that fits gives one document, the same bytes as
// MarshalForUpload.
func MarshalUploads(p Pipeline) ([][]byte, error) {
	parts, err := Split(p)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, len(parts))
	for _, part := range parts {
		b, err := encode(part.value())
		if err != nil {
			return nil, fmt.Errorf("marshalling pipeline: %w", err)
		}
		if b, err = escapeForUpload(b); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// escapeForUpload passes every string of the JSON document b through
// EscapeInterpolation.
func escapeForUpload(b []byte) ([]byte, error) {
	doc, err := decodeJSON(b)
	if err != nil {
		return nil, fmt.Errorf("marshalling pipeline for upload: %w", err)
	}
	escaped, err := escapeTree(doc, "$")
	if err != nil {
		return nil, fmt.Errorf("marshalling pipeline for upload: %w", err)
	}
	return encode(escaped)
}

// decodeJSON reads b back into maps and slices, numbers exactly as written.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("re-reading JSON: %w", err)
	}
	return doc, nil
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encoding pipeline JSON: %w", err)
	}
	return buf.Bytes(), nil
}

// value builds the JSON tree of p out of maps, so that encoding/json sorts
// every object's keys.
func (p Pipeline) value() map[string]any {
	o := object{}
	o.setStrings("env", p.Env)
	// Buildkite requires "steps", even when empty.
	o["steps"] = stepValues(p.Steps)
	return o
}

// stepValues is the JSON list of steps, never nil.
func stepValues(steps []Step) []any {
	list := make([]any, 0, len(steps))
	for _, s := range steps {
		list = append(list, stepValue(s))
	}
	return list
}

func stepValue(s Step) any {
	switch s := concrete(s).(type) {
	case CommandStep:
		return s.value()
	case GroupStep:
		return s.value()
	case WaitStep:
		return s.value()
	}
	// Unreachable after Validate, which rejects nil steps.
	return nil
}

// concrete returns the value a Step holds, dereferencing pointers so that
// *CommandStep and CommandStep mean the same. It returns nil for a nil step.
func concrete(s Step) Step {
	switch s := s.(type) {
	case *CommandStep:
		if s != nil {
			return *s
		}
	case *GroupStep:
		if s != nil {
			return *s
		}
	case *WaitStep:
		if s != nil {
			return *s
		}
	case CommandStep, GroupStep, WaitStep:
		return s
	}
	return nil
}

// object is a JSON object under construction whose setters skip zero
// values, so that only the attributes a step uses are written.
type object map[string]any

func (o object) setString(k, v string) {
	if v != "" {
		o[k] = v
	}
}

func (o object) setInt(k string, v int) {
	if v != 0 {
		o[k] = v
	}
}

func (o object) setTrue(k string, v bool) {
	if v {
		o[k] = true
	}
}

func (o object) setStrings(k string, m map[string]string) {
	if len(m) > 0 {
		o[k] = m
	}
}

func (o object) setList(k string, l []string) {
	if len(l) > 0 {
		o[k] = l
	}
}

func (o object) setDependsOn(deps []Dependency) {
	if len(deps) == 0 {
		return
	}
	list := make([]any, 0, len(deps))
	for _, d := range deps {
		list = append(list, d.value())
	}
	o["depends_on"] = list
}
