package job

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/baseline/baselinetest"
	"github.com/benchkite/benchkite/runner/internal/summary"
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

// TestWriteTrendDrawsWhereTheRecipeChanged: a recipe change is a known
// change point, not a new series: the picture keeps the nights of the old
// recipe and draws a grey line where the new one begins.
func TestWriteTrendDrawsWhereTheRecipeChanged(t *testing.T) {
	t.Parallel()
	fp := func(seqs string) *summary.Fingerprint {
		return summary.NewFingerprint(summary.FingerprintParts{Model: "m", ServeArgv: []string{"vllm", "serve", "m", "--max-num-seqs", seqs}, GPU: "MI355X", NumGPUs: 8})
	}
	tests := []struct {
		name    string
		oldFrom int // index, newest first, of the newest night of the old recipe; -1 none
		marks   int // lines drawn, one per chart
	}{
		{name: "one recipe", oldFrom: -1},
		{name: "changed two nights ago", oldFrom: 2, marks: 2},
		{name: "changed tonight", oldFrom: 0, marks: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			nights := append([]baseline.Night(nil), seedNights(t)["minimax_m3-mi355x"]...)
			for i := range nights {
				s, err := summary.Read(bytes.NewReader(nights[i].Summary))
				if err != nil {
					t.Fatal(err)
				}
				s.Fingerprint = fp("256")
				if tt.oldFrom >= 0 && i >= tt.oldFrom {
					s.Fingerprint = fp("128")
				}
				nights[i].Summary = baselinetest.Encode(t, s)
			}
			history := (&baselinetest.Source{Nights: map[string][]baseline.Night{"minimax_m3-mi355x": nights}}).History()
			sum := seedRun(0.93, 1490, 20.2)
			sum.Fingerprint = fp("256")
			j := &Job{dir: t.TempDir(), log: &strings.Builder{}, sum: sum, history: history}
			path := j.writeTrend(context.Background())
			if path == "" {
				t.Fatal("writeTrend() drew no picture")
			}
			svg, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(svg), ">recipe changed<"); n != tt.marks {
				t.Errorf("recipe-change lines = %d, want %d", n, tt.marks)
			}
			if n := strings.Count(string(svg), `<circle class="night"`); n != 2*len(nights) {
				t.Errorf("past nights drawn = %d, want all %d in both charts", n, 2*len(nights))
			}
		})
	}
}
