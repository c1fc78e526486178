package needs

import (
	"os"
	"testing"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// The seed recipe needs its own nights, as many as its regression gate
// reads, and its twin's (baseline_from), with gsm8k's samples for the
// paired test; the twin selected too needs no more than its own.
func TestOf(t *testing.T) {
	t.Parallel()
	profiles, err := agents.Default()
	if err != nil {
		t.Fatal(err)
	}
	var sel selection.Selection
	for _, f := range []string{"minimax_m3_mi355x.yaml", "minimax_m3_nospec_mi355x.yaml"} {
		path := "../../../testdata/workloads/" + f
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		r, ps := workloads.Parse(path, src, profiles)
		if r == nil {
			t.Fatal(ps)
		}
		sel.Runs = append(sel.Runs, selection.Selected{Recipe: r})
	}
	want := []contract.Need{
		{Recipe: "minimax_m3-mi355x", Nights: 30},
		{Recipe: "minimax_m3-nospec-mi355x", Nights: contract.TrendNights, Samples: []string{"gsm8k"}},
	}
	if diff := cmp.Diff(Of(&sel), want); diff != "" {
		t.Errorf("Of() diff (-got +want):\n%s", diff)
	}
}
