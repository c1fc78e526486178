package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/internal/testutil"
)

const profilesFlag = "../agents/profiles.yaml"

func TestLintCleanIsSilent(t *testing.T) {
	t.Parallel()
	got := runGenerator(t, nil, "lint", "--workloads", "../workloads", "--agents", profilesFlag)
	if diff := cmp.Diff(result{}, got, cmp.AllowUnexported(result{})); diff != "" {
		t.Errorf("lint of the shipped recipes (-want +got):\n%s", diff)
	}
}

// problemLine is the shape of every line lint prints on stdout.
var problemLine = regexp.MustCompile(`^(.+\.yaml):(\d+):(\d+): (.+)$`)

func TestLintReportsProblems(t *testing.T) {
	t.Parallel()
	dir := "testdata/lint/problems"
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{name: "flag", args: []string{"lint", "--workloads", dir, "--agents", profilesFlag}},
		{name: "env", args: []string{"lint"}, env: map[string]string{"BENCHKITE_WORKLOADS": dir, "BENCHKITE_AGENTS": profilesFlag}},
		{name: "trailing slash", args: []string{"lint", "--workloads", dir + "/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := runGenerator(t, tt.env, tt.args...)
			if got.code != 1 {
				t.Errorf("exit code = %d, want 1\nstderr:\n%s", got.code, got.stderr)
			}
			checkGolden(t, filepath.Join("testdata", "lint", "problems.stdout"), []byte(got.stdout))

			// Positions independent of the golden file, so that an update
			// cannot quietly accept wrong ones.
			var positions []string
			for _, line := range strings.Split(strings.TrimSuffix(got.stdout, "\n"), "\n") {
				m := problemLine.FindStringSubmatch(line)
				if m == nil {
					t.Errorf("stdout line %q is not path:line:col: message", line)
					continue
				}
				positions = append(positions, strings.TrimPrefix(m[1], dir+"/")+":"+m[2]+":"+m[3])
			}
			want := []string{
				"dup_b.yaml:2:7",     // the name used twice
				"mistakes.yaml:2:6",  // unknown gpu
				"mistakes.yaml:3:11", // num_gpus below TP
				"mistakes.yaml:4:10", // not a bool
				"mistakes.yaml:5:1",  // misspelt field
				"mistakes.yaml:15:20",
				"mistakes.yaml:17:20",
				"startup_mistakes.yaml:8:7", // not a start-up time
				"syntax.yaml:2:1",
			}
			if diff := cmp.Diff(want, positions); diff != "" {
				t.Errorf("problem positions (-want +got):\n%s", diff)
			}
			if strings.Contains(got.stdout, "warning") || strings.Contains(got.stdout, "deprecated_fields.yaml") {
				t.Errorf("a warning reached stdout:\n%s", got.stdout)
			}
			for _, w := range []string{
				dir + "/deprecated_fields.yaml:19:7: warning: speed_bench_dataset_subset is ignored",
				dir + "/deprecated_fields.yaml:20:7: warning: speed_bench_category is ignored",
				"generator lint: 4 invalid recipe files",
			} {
				if !strings.Contains(got.stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, got.stderr)
				}
			}
		})
	}
}

func TestLintFlagBeatsEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"BENCHKITE_WORKLOADS": "testdata/lint/problems"}
	got := runGenerator(t, env, "lint", "--workloads", "../testdata/workloads", "--agents", profilesFlag)
	if got.code != 0 || got.stdout != "" {
		t.Errorf("lint --workloads ../testdata/workloads with BENCHKITE_WORKLOADS set = %+v, want the flag to win", got)
	}
}

func TestLintWarningsOnlyIsClean(t *testing.T) {
	t.Parallel()
	got := runGenerator(t, nil, "lint", "--workloads", "testdata/lint/warnings-only", "--agents", profilesFlag)
	if got.code != 0 || got.stdout != "" {
		t.Errorf("lint of a recipe with warnings only = %+v, want exit 0 and empty stdout", got)
	}
	if n := strings.Count(got.stderr, ": warning: speed_bench_"); n != 2 {
		t.Errorf("stderr has %d speed_bench warnings, want 2:\n%s", n, got.stderr)
	}
}

func TestLintMissingDirectory(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"lint", "--workloads", "testdata/lint/no-such-dir"},
		{"lint", "--workloads", "testdata/lint/problems/mistakes.yaml"}, // a file, not a directory
	} {
		got := runGenerator(t, nil, args...)
		if got.code != 1 || got.stdout != "" {
			t.Errorf("%v = exit %d, stdout %q; want exit 1 and empty stdout", args, got.code, got.stdout)
		}
		want := "generator lint: list recipes in " + args[2] + ": "
		if !strings.HasPrefix(got.stderr, want) || strings.Count(got.stderr, "\n") != 1 {
			t.Errorf("%v stderr = %q, want one line starting %q", args, got.stderr, want)
		}
	}
}

// The recipes of the system this one replaces must pass as they are, with
// only the deprecated speed_bench fields warned about.
func TestLintReferenceRecipes(t *testing.T) {
	t.Parallel()
	for _, rel := range []string{"perf-eval/workloads", "perf-eval/seed-pr/workloads"} {
		dir := testutil.ReferenceDir(t, rel)
		got := runGenerator(t, nil, "lint", "--workloads", dir, "--agents", profilesFlag)
		if got.code != 0 || got.stdout != "" {
			t.Errorf("lint %s = exit %d, want 0 and empty stdout; stdout:\n%s\nstderr:\n%s", rel, got.code, got.stdout, got.stderr)
		}
		for _, line := range strings.Split(strings.TrimSuffix(got.stderr, "\n"), "\n") {
			if line != "" && !strings.Contains(line, ": warning: speed_bench_") {
				t.Errorf("lint %s: unexpected stderr line %q", rel, line)
			}
		}
	}
}
