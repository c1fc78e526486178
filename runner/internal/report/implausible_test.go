package report

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// A number near the float64 maximum, in tonight's summary or in a past
// night the history holds, is refused where it is read, naming where it
// came from; the report step still writes its report and trend page
// instead of panicking for the whole build.
func TestReportRefusesImplausibleValues(t *testing.T) {
	t.Parallel()
	const recipe = "gpt_oss_120b-h200"
	huge := func(s *summary.Summary) {
		for i := range s.Bench {
			if s.Bench[i].Status == summary.StatusOK {
				s.Bench[i].OutputThroughputPerGPU = 1.7e308
				return
			}
		}
		t.Fatal("fixture has no OK bench run")
	}
	tests := []struct {
		name           string
		tonight, night bool
		want           []string
	}{
		{name: "tonight", tonight: true, want: []string{"Results that could not be read:", recipe + "/summary.json", "output_throughput_per_gpu: 1.7e+308 is not a plausible measurement"}},
		{name: "a past night", night: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := resultsWith(t, recipe)
			path := filepath.Join(dir, recipe, "summary.json")
			s, err := summary.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			past := s
			past.Bench = append([]summary.BenchRun(nil), s.Bench...)
			if tt.night {
				huge(&past)
			}
			data, err := json.Marshal(past)
			if err != nil {
				t.Fatal(err)
			}
			f := &baseline.File{Version: baseline.FileVersion, Recipes: map[string]baseline.FileRecipe{}}
			nights := []baseline.Night{
				{BuildNumber: 811, CreatedAt: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC), Summary: data},
				{BuildNumber: 810, CreatedAt: time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC), Summary: data},
			}
			f.Record(recipe, contract.StepKey(recipe), trendNights, baseline.Result{Nights: nights}, nil)
			if err := f.WriteDir(filepath.Join(dir, "_history")); err != nil {
				t.Fatal(err)
			}
			if tt.tonight {
				huge(&s)
				if err := summary.Write(path, s); err != nil {
					t.Fatal(err)
				}
			}
			env := map[string]string{"BUILDKITE_BUILD_URL": "https://buildkite.com/benchkite/nightly/builds/812"}
			var stdout, stderr strings.Builder
			err = Run(context.Background(), Config{Results: dir}, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapGetenv(env), buildkite.Door{})
			if code := cliutil.ExitCode(err, "runner report", &stderr); code > 1 {
				t.Fatalf("report exit = %d: %v\n%s", code, err, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			page, err := os.ReadFile(filepath.Join(dir, "_report", "trends.html"))
			if err != nil {
				matches, _ := filepath.Glob(filepath.Join(dir, "*", "*.html"))
				t.Fatalf("no trend page (%v); html files: %v", err, matches)
			}
			if strings.Contains(string(page), "e+308") || strings.Contains(string(page), "Inf") {
				t.Errorf("trend page carries the implausible value")
			}
		})
	}
}
