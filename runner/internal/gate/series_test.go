package gate

import (
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

func fpWith(args ...string) *summary.Fingerprint {
	return summary.NewFingerprint(summary.FingerprintParts{Model: "m", ServeArgv: append([]string{"vllm", "serve", "m"}, args...), GPU: "H200", NumGPUs: 8})
}

func nightsOf(fps ...*summary.Fingerprint) baseline.Nights {
	var h baseline.Nights
	for i, fp := range fps {
		h.Nights = append(h.Nights, baseline.Past{Night: baseline.Night{BuildNumber: 50 - i}, Summary: summary.Summary{Fingerprint: fp}})
	}
	return h
}

func TestComparable(t *testing.T) {
	t.Parallel()
	now, old := fpWith("--max-num-seqs", "256"), fpWith("--max-num-seqs", "128")
	tests := []struct {
		name   string
		h      baseline.Nights
		fp     *summary.Fingerprint
		kept   []int
		series string
	}{
		{name: "same series", h: nightsOf(now, now), fp: now, kept: []int{50, 49}},
		{name: "tonight changed the serve args", h: nightsOf(old, old), fp: now, series: "new series since this build: serve args changed (build #50 ran the old ones)"},
		{name: "changed two nights ago", h: nightsOf(now, now, old), fp: now, kept: []int{50, 49}, series: "new series since build #49: serve args changed"},
		{name: "nights before fingerprints count", h: nightsOf(now, nil), fp: now, kept: []int{50, 49}},
		{name: "tonight without a fingerprint keeps all", h: nightsOf(old, now), fp: nil, kept: []int{50, 49}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			kept, series := Comparable(tt.h, tt.fp)
			var got []int
			for _, n := range kept.Nights {
				got = append(got, n.BuildNumber)
			}
			if diff := cmp.Diff(got, tt.kept); diff != "" {
				t.Errorf("Comparable() nights diff (-got +want):\n%s", diff)
			}
			if series != tt.series {
				t.Errorf("Comparable() series = %q, want %q", series, tt.series)
			}
		})
	}
}

func TestFingerprintChanged(t *testing.T) {
	t.Parallel()
	a := summary.NewFingerprint(summary.FingerprintParts{Model: "m", ServeEnv: []string{"B=2", "A=1"}, Bench: []string{"short temperature=0"}, GPU: "H200", NumGPUs: 8})
	b := summary.NewFingerprint(summary.FingerprintParts{Model: "m", ServeEnv: []string{"A=1", "B=2"}, Bench: []string{"short temperature=0"}, GPU: "H200", NumGPUs: 8})
	if a.Hash != b.Hash {
		t.Errorf("env order changed the hash: %s vs %s", a.Hash, b.Hash)
	}
	c := summary.NewFingerprint(summary.FingerprintParts{Model: "m", ServeEnv: []string{"A=1"}, Bench: []string{"short temperature=0.6"}, GPU: "H200", NumGPUs: 4})
	if diff := cmp.Diff(a.Changed(c), []string{"serve env", "bench config", "GPUs"}); diff != "" {
		t.Errorf("Changed() diff (-got +want):\n%s", diff)
	}
	if got := a.Changed(b); got != nil {
		t.Errorf("Changed(same) = %q, want none", got)
	}
}
