package contract

import (
	"testing"

	"github.com/benchkite/benchkite/steps"
	"github.com/google/go-cmp/cmp"
)

func TestSkippedRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   []Skipped
		want []Skipped
	}{
		{"none", nil, nil},
		{"two", []Skipped{{"a", "blocked by x"}, {"b", "not nightly"}}, []Skipped{{"a", "blocked by x"}, {"b", "not nightly"}}},
		{"backslashes kept", []Skipped{{`a\b`, `costs \$5 \\$ \`}}, []Skipped{{`a\b`, `costs \$5 \\$ \`}}},
		{"tabs and newlines flattened", []Skipped{{"a\tb", "line one\nline\ttwo"}}, []Skipped{{"a b", "line one line two"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			enc := EncodeSkipped(tt.in)
			if err := steps.CheckInterpolation(enc); err != nil {
				t.Errorf("EncodeSkipped(%q) = %q, which upload cannot carry: %v", tt.in, enc, err)
			}
			got := ParseSkipped(enc)
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("ParseSkipped(EncodeSkipped(%q)) diff (-got +want):\n%s", tt.in, diff)
			}
		})
	}
}

func TestPaths(t *testing.T) {
	t.Parallel()
	got := []string{StepKey("m-x"), ResultsDir("m-x"), SummaryPath("m-x"), ArtifactGlob(ResultsDir("m-x")), ArtifactGlob("out/sweep/")}
	want := []string{"recipe:m-x", "results/m-x", "results/m-x/summary.json", "results/m-x/**/*", "out/sweep/**/*"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("paths diff (-got +want):\n%s", diff)
	}
}
