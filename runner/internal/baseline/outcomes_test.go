package baseline_test

import (
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/paired"
	"github.com/google/go-cmp/cmp"
)

func TestOutcomesOfAndRight(t *testing.T) {
	t.Parallel()
	s := func(id int, hash, filter string, m map[string]float64) paired.Sample {
		return paired.Sample{DocID: id, DocHash: hash, Filter: filter, Metrics: m}
	}
	o := baseline.OutcomesOf("gsm8k", []paired.Sample{
		s(0, "a", "strict-match", map[string]float64{"exact_match": 1, "len": 17}),
		s(0, "a", "flexible-extract", map[string]float64{"exact_match": 1}),
		s(1, "b", "strict-match", map[string]float64{"exact_match": 0, "len": 3}),
		s(2, "c", "flexible-extract", map[string]float64{"exact_match": 0}),
		// The same question as document 1: kept apart by its id.
		s(3, "b", "strict-match", map[string]float64{"exact_match": 1}),
	})
	want := baseline.Outcomes{Task: "gsm8k", DocHashes: []string{"a", "b", "c", "b"}, DocIDs: []int{0, 1, 2, 3},
		// len is not 0/1: dropped. c was not scored under strict-match.
		Scores: map[string]string{"exact_match,strict-match": "10-1", "exact_match,flexible-extract": "1-0-"}}
	if diff := cmp.Diff(o, want); diff != "" {
		t.Fatalf("OutcomesOf() diff (-got +want):\n%s", diff)
	}
	got, err := o.Right("exact_match,strict-match")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, map[string]bool{"0:a": true, "1:b": false, "3:b": true}); diff != "" {
		t.Errorf("Right() diff (-got +want):\n%s", diff)
	}
	// Outcomes stored before doc ids pair by hash.
	old := baseline.Outcomes{Task: "gsm8k", DocHashes: []string{"a", "b"}, Scores: map[string]string{"m": "10"}}
	if got, err := old.Right("m"); err != nil || !old.ByHash() || !cmp.Equal(got, map[string]bool{"a": true, "b": false}) {
		t.Errorf("Right(no ids) = %v, %v, by hash %v", got, err, old.ByHash())
	}
	for _, tt := range []struct {
		o      baseline.Outcomes
		metric string
		want   string
	}{
		{o, "acc", `no metric "acc" (they have exact_match,flexible-extract, exact_match,strict-match)`},
		{baseline.Outcomes{Task: "gsm8k", Missing: "no samples artifact"}, "exact_match,strict-match", "no per-question outcomes: no samples artifact"},
		{baseline.Outcomes{Task: "gsm8k", DocHashes: []string{"a"}, Scores: map[string]string{"m": "10"}}, "m", "damaged: 2 scores for 1 documents"},
		{baseline.Outcomes{Task: "gsm8k", DocHashes: []string{"a"}, Scores: map[string]string{"m": "x"}}, "m", "damaged"},
	} {
		if _, err := tt.o.Right(tt.metric); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Right(%q) error = %v, want %q", tt.metric, err, tt.want)
		}
	}
}

func TestOutcomeNights(t *testing.T) {
	t.Parallel()
	n := func(model, digest string) baseline.Night {
		return baseline.Night{Summary: []byte(`{"schema_version":1,"recipe":"r","model":"` + model + `","image_digest":"` + digest + `"}`)}
	}
	nights := []baseline.Night{n("m", "d2"), n("m", "d2"), n("m", "d1"), n("other", "d1"), n("m", "d1"), {Summary: []byte("{")}}
	if diff := cmp.Diff(baseline.OutcomeNights(nights), []int{0, 2, 3, 5}); diff != "" {
		t.Errorf("OutcomeNights() diff (-got +want):\n%s", diff)
	}
}
