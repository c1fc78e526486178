package job

import (
	"math"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

// The trend has the server's time to ready beside the bench's numbers:
// past nights' (missing where a night has none) and tonight's.
func TestTrendPanelsStartup(t *testing.T) {
	t.Parallel()
	night := func(build int, ready float64) baseline.Past {
		s := summary.Summary{Recipe: "r", Verdict: summary.VerdictPass}
		if ready > 0 {
			s.Startup = &summary.Startup{ReadySeconds: ready}
		}
		return baseline.Past{Night: baseline.Night{BuildNumber: build}, Summary: s}
	}
	history := baseline.Nights{Nights: []baseline.Past{night(12, 130), night(11, 0), night(10, 128)}}
	tonight := summary.Summary{Recipe: "r", Startup: &summary.Startup{ReadySeconds: 45}}
	var got []float64
	found := false
	for _, p := range trendPanels(tonight, history) {
		if p.Title != "server time to ready" {
			continue
		}
		found = true
		if p.Unit != "s" || p.HigherIsBetter {
			t.Errorf("panel %q: unit %q, higher is better %v", p.Title, p.Unit, p.HigherIsBetter)
		}
		for _, pt := range p.Points {
			if math.IsNaN(pt.Value) {
				got = append(got, -1)
				continue
			}
			got = append(got, pt.Value)
		}
	}
	if !found {
		t.Fatal("no time-to-ready panel")
	}
	if diff := cmp.Diff([]float64{128, -1, 130, 45}, got); diff != "" {
		t.Errorf("points (-want +got):\n%s", diff)
	}
}
