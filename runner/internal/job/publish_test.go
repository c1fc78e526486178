package job

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/google/go-cmp/cmp"
)

// failedRing is a past night drawn as failed, with its hover title.
var failedRing = regexp.MustCompile(`<circle class="night failed"[^>]*><title>([^<]*)</title>`)

// TestWriteTrendMarksFailedNights: a night whose job failed comes out of
// the history as a failed night in every chart of the annotation's
// picture, and no other night does.
func TestWriteTrendMarksFailedNights(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		failed []int // indexes, newest first, of the nights that failed
		want   []string
	}{
		{name: "all passed"},
		{name: "one failed", failed: []int{1}, want: []string{
			"#79: 183.75 · job failed", // throughput per GPU: 1470 / 8
			"#79: 0.93 · job failed",   // gsm8k
		}},
		{name: "newest and oldest failed", failed: []int{0, 4}, want: []string{
			"#76: 182.50 · job failed", "#80: 185.00 · job failed",
			"#76: 0.93 · job failed", "#80: 0.93 · job failed",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			nights := append([]baseline.Night(nil), seedNights(t)["minimax_m3-mi355x"]...)
			for _, i := range tt.failed {
				nights[i].Failed = true
			}
			history := (&baselinetest.Source{Nights: map[string][]baseline.Night{"minimax_m3-mi355x": nights}}).History()
			log := &strings.Builder{}
			j := &Job{dir: t.TempDir(), log: log, sum: seedRun(0.93, 1490, 20.2), history: history}
			path := j.writeTrend(context.Background())
			if path == "" {
				t.Fatalf("writeTrend() drew no picture; log:\n%s", log)
			}
			svg, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range failedRing.FindAllStringSubmatch(string(svg), -1) {
				got = append(got, m[1])
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("failed nights drawn (-want +got):\n%s", diff)
			}
			if n := strings.Count(string(svg), " · job failed"); n != len(tt.want) {
				t.Errorf(`" · job failed" said %d times, want %d (once per failed night and chart)`, n, len(tt.want))
			}
			if tonight := regexp.MustCompile(`<circle class="night tonight"[^>]*><title>tonight: [0-9.]+</title>`); len(tonight.FindAllString(string(svg), -1)) != 2 {
				t.Errorf("tonight is not drawn as tonight in both charts:\n%s", svg)
			}
		})
	}
}
