package job

import (
	"testing"

	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

// The summary names the branch the run's nights come from, read as the
// history step reads it, beside the branch the build ran on.
func TestBuildkiteInfoBaselineBranch(t *testing.T) {
	t.Parallel()
	job := map[string]string{
		"BUILDKITE_JOB_ID":       "0190a000-0000-4000-8000-000000000111",
		"BUILDKITE_BUILD_NUMBER": "111",
		"BUILDKITE_BUILD_URL":    "https://buildkite.com/benchkite/benchkite-nightly/builds/111",
	}
	with := func(kv ...string) map[string]string {
		env := map[string]string{}
		for k, v := range job {
			env[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			env[kv[i]] = kv[i+1]
		}
		return env
	}
	base := summary.BuildkiteInfo{JobID: job["BUILDKITE_JOB_ID"], BuildNumber: "111", BuildURL: job["BUILDKITE_BUILD_URL"]}
	want := func(branch, baseline, source, pr string) *summary.BuildkiteInfo {
		bk := base
		bk.Branch, bk.BaselineBranch, bk.Source, bk.PullRequest = branch, baseline, source, pr
		return &bk
	}
	tests := []struct {
		name string
		env  map[string]string
		want *summary.BuildkiteInfo
	}{
		{"nightly", with("BUILDKITE_BRANCH", "main", "BUILDKITE_PIPELINE_DEFAULT_BRANCH", "main", "BUILDKITE_SOURCE", "schedule", "BUILDKITE_PULL_REQUEST", "false"),
			want("main", "main", "schedule", "false")},
		{"pull request", with("BUILDKITE_BRANCH", "fewer-seqs", "BUILDKITE_PIPELINE_DEFAULT_BRANCH", "main", "BUILDKITE_SOURCE", "webhook", "BUILDKITE_PULL_REQUEST", "7"),
			want("fewer-seqs", "main", "webhook", "7")},
		{"baseline branch set", with("BUILDKITE_BRANCH", "fewer-seqs", "BUILDKITE_PIPELINE_DEFAULT_BRANCH", "main", "BENCHKITE_BASELINE_BRANCH", " release/v0.9 "),
			want("fewer-seqs", "release/v0.9", "", "")},
		{"baseline branch blank", with("BUILDKITE_BRANCH", "main", "BUILDKITE_PIPELINE_DEFAULT_BRANCH", "main", "BENCHKITE_BASELINE_BRANCH", " "),
			want("main", "main", "", "")},
		{"default branch unknown", with("BUILDKITE_BRANCH", "fewer-seqs", "BUILDKITE_PULL_REQUEST", "7"),
			want("fewer-seqs", "", "", "7")},
		{"not in Buildkite", map[string]string{"BUILDKITE_PIPELINE_DEFAULT_BRANCH": "main"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, buildkiteInfo(mapGetenv(tt.env))); diff != "" {
				t.Errorf("buildkiteInfo (-want +got):\n%s", diff)
			}
		})
	}
}
