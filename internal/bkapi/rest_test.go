package bkapi

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNextPage(t *testing.T) {
	t.Parallel()
	for link, want := range map[string]int{
		"": 0,
		`<https://api.buildkite.com/v2/organizations/o/pipelines/p/builds?page=3&per_page=100>; rel="next", <https://api.buildkite.com/v2/organizations/o/pipelines/p/builds?page=9&per_page=100>; rel="last"`: 3,
		`<https://api.buildkite.com/v2/x?page=1>; rel="first", <https://api.buildkite.com/v2/x?page=4>; rel="prev"`:                                                                                            0,
		`<https://api.buildkite.com/v2/x?page=two>; rel="next"`: 0,
	} {
		if got := nextPage(link); got != want {
			t.Errorf("nextPage(%q) = %d, want %d", link, got, want)
		}
	}
}

// A build as the API writes it, nulls and non-string env values included.
func TestBuildFrom(t *testing.T) {
	t.Parallel()
	raw := `{"id":"b1","number":42,"state":"passed","source":"schedule","branch":"main","commit":"abc","message":"nightly",
	"web_url":"https://buildkite.com/o/p/builds/42","created_at":"2026-11-30T02:00:01.123Z","finished_at":null,
	"env":{"A":"1","N":7,"B":true},"jobs":[{"id":"j1","step_key":"s","label":"L","state":"failed","soft_failed":true,"exit_status":75},null,
	{"id":"j2","step_key":null,"state":"waiting","exit_status":null}]}`
	var b buildJSON
	if err := json.Unmarshal([]byte(raw), &b); err != nil {
		t.Fatal(err)
	}
	seventyFive := 75
	want := Build{ID: "b1", Number: 42, State: "passed", Source: "schedule", Branch: "main", Commit: "abc", Message: "nightly",
		WebURL: "https://buildkite.com/o/p/builds/42", CreatedAt: time.Date(2026, 11, 30, 2, 0, 1, 123e6, time.UTC),
		Env: map[string]string{"A": "1"},
		Jobs: []Job{{ID: "j1", StepKey: "s", Label: "L", State: "failed", SoftFailed: true, ExitStatus: &seventyFive},
			{ID: "j2", State: "waiting"}}}
	if diff := cmp.Diff(buildFrom(b), want); diff != "" {
		t.Errorf("buildFrom() diff (-got +want):\n%s", diff)
	}
}
