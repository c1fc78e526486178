package contract

import (
	"fmt"
	"slices"
	"strings"
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

func TestNeedsRoundTrip(t *testing.T) {
	t.Parallel()
	in := []Need{{Recipe: "a-h200", Nights: 10}, {Recipe: "b-mi355x", Nights: 1, Samples: []string{"gsm8k", "mmlu_pro.math"}}}
	got, err := ParseNeeds(EncodeNeeds(in) + "\n\n")
	if err != nil {
		t.Fatalf("ParseNeeds(EncodeNeeds(%v)): %v", in, err)
	}
	if diff := cmp.Diff(got, in); diff != "" {
		t.Errorf("ParseNeeds(EncodeNeeds(x)) diff (-got +want):\n%s", diff)
	}
}

func TestParseNeedsRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"a-h200", "a-h200\tzero", "a-h200\t0", "\t3", "a-h200\t3\tgsm8k", "a-h200\t3\tsamples=", "a-h200\t3\tsamples=gsm8k,", "a-h200\t3\tsamples=gsm8k\textra"} {
		if got, err := ParseNeeds(in); err == nil {
			t.Errorf("ParseNeeds(%q) = %v, want an error", in, got)
		} else if !strings.Contains(err.Error(), HistoryEnv+" line 1") {
			t.Errorf("ParseNeeds(%q) error %q does not name the line", in, err)
		}
	}
}

func TestTaskDirs(t *testing.T) {
	t.Parallel()
	tests := []struct{ names, want []string }{
		{[]string{"gsm8k", "mmlu"}, []string{"gsm8k", "mmlu"}},
		{[]string{"gsm8k", "gsm8k", "gsm8k"}, []string{"gsm8k", "gsm8k.2", "gsm8k.3"}},
		// A task really named gsm8k.2 keeps its name; the repeat moves on.
		{[]string{"gsm8k", "gsm8k", "gsm8k.2"}, []string{"gsm8k", "gsm8k.3", "gsm8k.2"}},
	}
	for _, tt := range tests {
		if got := TaskDirs(tt.names); !slices.Equal(got, tt.want) {
			t.Errorf("TaskDirs(%q) = %q, want %q", tt.names, got, tt.want)
		}
	}
}

// An env var over 128 KiB keeps a step from starting: a long skipped
// list (long blocked_by reasons) is cut with a note, whole records kept.
func TestCapSkipped(t *testing.T) {
	t.Parallel()
	var list []Skipped
	for i := 0; i < 400; i++ {
		list = append(list, Skipped{Name: "recipe-" + strings.Repeat("x", 20), Reason: "blocked by " + strings.Repeat("vllm-project/vllm#1 ", 25)})
	}
	v := EncodeSkipped(list)
	if len(v) <= MaxEnvValue {
		t.Fatalf("test list is only %d bytes", len(v))
	}
	got := CapSkipped(v)
	if len(got) > MaxEnvValue {
		t.Fatalf("CapSkipped() is %d bytes, over %d", len(got), MaxEnvValue)
	}
	parsed := ParseSkipped(got)
	last := parsed[len(parsed)-1]
	if last.Name != "…" || !strings.Contains(last.Reason, fmt.Sprintf("and %d more", len(list)-(len(parsed)-1))) {
		t.Errorf("last record = %+v, want the number cut", last)
	}
	if short := EncodeSkipped(list[:2]); CapSkipped(short) != short {
		t.Errorf("a short list was changed")
	}
}

func TestNightPassed(t *testing.T) {
	t.Parallel()
	code := func(n int) *int { return &n }
	tests := []struct {
		state      string
		softFailed bool
		exit       *int
		want       bool
	}{
		{"passed", false, code(0), true},
		{"failed", true, code(ExitUnverified), true},
		{"failed", true, code(ExitRegressed), true},
		{"failed", false, code(ExitRegressed), false}, // not soft-failed: the step did not list it
		{"failed", true, code(1), false},              // soft_fail: true of a blocked recipe
		{"failed", false, code(1), false},
		{"failed", true, nil, false},
		{"canceled", false, nil, false},
	}
	for _, tt := range tests {
		if got := NightPassed(tt.state, tt.softFailed, tt.exit); got != tt.want {
			t.Errorf("NightPassed(%q, %v, %v) = %v, want %v", tt.state, tt.softFailed, tt.exit, got, tt.want)
		}
	}
}
