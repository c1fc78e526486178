package steptest

import (
	"maps"
	"slices"
	"strings"

	pipeline "github.com/buildkite/go-pipeline"
)

// Normalize rewrites a decoded pipeline document (as from encoding/json)
// into one canonical form, so that two documents Buildkite reads the same
// way compare equal. It does what the agent's upload does to a pipeline,
// besides interpolation:
//
//   - a bare list of steps becomes {"steps": [...]}, and "wait" or
//     "waiter" written as a string becomes {"wait": null};
//   - "commands" and "command", as a string or a list, become one
//     "command" string with the commands joined by newlines, and an empty
//     command (the agent writes "command": "" for a plugin-only step) is
//     removed;
//   - plugin names get their full source ("docker#v1" becomes
//     "github.com/buildkite-plugins/docker-buildkite-plugin#v1"), plugins
//     given as a map or a bare name become a list of one-key objects, and an
//     empty config becomes null;
//   - "secrets" as a list of names, a list of {key, environment_variable}
//     or a map all become a map from variable name to secret key;
//   - "depends_on" becomes a list, with {"step": k} lacking a true
//     allow_failure written as just k.
//
// Group steps are normalised recursively. v is not modified.
func Normalize(v any) any {
	switch v := v.(type) {
	case []any:
		return map[string]any{"steps": normalizeSteps(v)}
	case map[string]any:
		out := maps.Clone(v)
		if steps, ok := v["steps"].([]any); ok {
			out["steps"] = normalizeSteps(steps)
		}
		if s, ok := v["secrets"]; ok {
			out["secrets"] = normalizeSecrets(s)
		}
		return out
	}
	return v
}

func normalizeSteps(steps []any) []any {
	out := make([]any, 0, len(steps))
	for _, s := range steps {
		out = append(out, normalizeStep(s))
	}
	return out
}

func normalizeStep(s any) any {
	switch s := s.(type) {
	case string:
		if s == "wait" || s == "waiter" {
			return map[string]any{"wait": nil}
		}
		return s
	case map[string]any:
		out := maps.Clone(s)
		if steps, ok := s["steps"].([]any); ok {
			out["steps"] = normalizeSteps(steps)
		}
		if cmd, ok := joinCommands(s); ok {
			delete(out, "commands")
			out["command"] = cmd
			if cmd == "" {
				delete(out, "command")
			}
		}
		if p, ok := s["plugins"]; ok {
			out["plugins"] = normalizePlugins(p)
		}
		if sec, ok := s["secrets"]; ok {
			out["secrets"] = normalizeSecrets(sec)
		}
		if deps, ok := s["depends_on"]; ok {
			if deps == nil {
				delete(out, "depends_on")
			} else {
				out["depends_on"] = normalizeDependsOn(deps)
			}
		}
		return out
	}
	return s
}

// joinCommands returns the step's commands as one newline-joined string,
// the form the agent uploads.
func joinCommands(step map[string]any) (string, bool) {
	var lines []string
	found := false
	for _, k := range []string{"command", "commands"} {
		switch c := step[k].(type) {
		case string:
			lines, found = append(lines, c), true
		case []any:
			found = true
			for _, l := range c {
				if s, ok := l.(string); ok {
					lines = append(lines, s)
				}
			}
		}
	}
	return strings.Join(lines, "\n"), found
}

func normalizePlugins(p any) any {
	var out []any
	add := func(name string, cfg any) {
		switch c := cfg.(type) {
		case map[string]any:
			if len(c) == 0 {
				cfg = nil
			}
		case []any:
			if len(c) == 0 {
				cfg = nil
			}
		}
		full := (&pipeline.Plugin{Source: name}).FullSource()
		out = append(out, map[string]any{full: cfg})
	}
	switch p := p.(type) {
	case []any:
		for _, e := range p {
			switch e := e.(type) {
			case string:
				add(e, nil)
			case map[string]any:
				for _, name := range slices.Sorted(maps.Keys(e)) {
					add(name, e[name])
				}
			default:
				out = append(out, e)
			}
		}
	case map[string]any:
		// The deprecated map form has no order; sort for a stable result.
		for _, name := range slices.Sorted(maps.Keys(p)) {
			add(name, p[name])
		}
	default:
		return p
	}
	return out
}

func normalizeSecrets(s any) any {
	switch s := s.(type) {
	case []any:
		out := map[string]any{}
		for _, e := range s {
			switch e := e.(type) {
			case string:
				out[e] = e
			case map[string]any:
				key, _ := e["key"].(string)
				env, _ := e["environment_variable"].(string)
				if env == "" {
					env = key
				}
				out[env] = key
			}
		}
		return out
	}
	return s
}

func normalizeDependsOn(d any) any {
	list, ok := d.([]any)
	if !ok {
		list = []any{d}
	}
	out := make([]any, 0, len(list))
	for _, e := range list {
		if m, ok := e.(map[string]any); ok {
			if allow, _ := m["allow_failure"].(bool); !allow {
				if step, ok := m["step"]; ok && len(m) <= 2 {
					out = append(out, step)
					continue
				}
			}
		}
		out = append(out, e)
	}
	return out
}
