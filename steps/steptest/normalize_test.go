package steptest_test

import (
	"encoding/json"
	"testing"

	"github.com/benchkite/benchkite/steps/steptest"
	"github.com/google/go-cmp/cmp"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
	return v
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{
			name: "commands list folds into command",
			in:   `{"steps": [{"commands": ["a", "b"]}, {"command": ["c", "d"]}, {"command": "e"}]}`,
			want: `{"steps": [{"command": "a\nb"}, {"command": "c\nd"}, {"command": "e"}]}`,
		},
		{
			name: "empty command of a plugin-only step is dropped",
			in:   `{"steps": [{"command": "", "plugins": ["x"]}]}`,
			want: `{"steps": [{"plugins": [{"github.com/buildkite-plugins/x-buildkite-plugin": null}]}]}`,
		},
		{
			name: "plugin names get their full source",
			in: `{"steps": [{"plugins": [
				{"docker#v5.12.0": {"image": "x"}},
				{"acme/cache#v1": {}},
				{"./local": []},
				{"https://example.com/p.git#v1": null}
			]}]}`,
			want: `{"steps": [{"plugins": [
				{"github.com/buildkite-plugins/docker-buildkite-plugin#v5.12.0": {"image": "x"}},
				{"github.com/acme/cache-buildkite-plugin#v1": null},
				{"./local": null},
				{"https://example.com/p.git#v1": null}
			]}]}`,
		},
		{
			name: "plugins map becomes a sorted list",
			in:   `{"steps": [{"plugins": {"b#v1": {"k": 1}, "a#v1": null}}]}`,
			want: `{"steps": [{"plugins": [
				{"github.com/buildkite-plugins/a-buildkite-plugin#v1": null},
				{"github.com/buildkite-plugins/b-buildkite-plugin#v1": {"k": 1}}
			]}]}`,
		},
		{
			name: "secrets in every form",
			in: `{"secrets": ["TOP"], "steps": [
				{"command": "x", "secrets": ["A", {"key": "b-key", "environment_variable": "B"}, {"key": "C"}]},
				{"command": "y", "secrets": {"D": "d-key"}}
			]}`,
			want: `{"secrets": {"TOP": "TOP"}, "steps": [
				{"command": "x", "secrets": {"A": "A", "B": "b-key", "C": "C"}},
				{"command": "y", "secrets": {"D": "d-key"}}
			]}`,
		},
		{
			name: "depends_on forms",
			in: `{"steps": [
				{"command": "x", "depends_on": "a"},
				{"command": "x", "depends_on": [{"step": "a"}, {"step": "b", "allow_failure": false}, {"step": "c", "allow_failure": true}, "d"]},
				{"command": "x", "depends_on": null}
			]}`,
			want: `{"steps": [
				{"command": "x", "depends_on": ["a"]},
				{"command": "x", "depends_on": ["a", "b", {"step": "c", "allow_failure": true}, "d"]},
				{"command": "x"}
			]}`,
		},
		{
			name: "bare list, wait strings and groups",
			in:   `["wait", {"group": "g", "steps": ["waiter", {"commands": ["a", "b"]}]}, "block"]`,
			want: `{"steps": [{"wait": null}, {"group": "g", "steps": [{"wait": null}, {"command": "a\nb"}]}, "block"]}`,
		},
		{
			name: "other attributes untouched",
			in:   `{"env": {"A": "1"}, "steps": [{"command": "x", "label": "l", "retry": {"automatic": [{"exit_status": -1, "limit": 2}]}}]}`,
			want: `{"env": {"A": "1"}, "steps": [{"command": "x", "label": "l", "retry": {"automatic": [{"exit_status": -1, "limit": 2}]}}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := decode(t, tt.in)
			got := steptest.Normalize(in)
			if diff := cmp.Diff(got, decode(t, tt.want)); diff != "" {
				t.Errorf("Normalize(%s) diff (-got +want):\n%s", tt.in, diff)
			}
			if diff := cmp.Diff(in, decode(t, tt.in)); diff != "" {
				t.Errorf("Normalize modified its input; diff (-after +before):\n%s", diff)
			}
		})
	}
}
