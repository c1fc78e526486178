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

func TestRecipeChange(t *testing.T) {
	t.Parallel()
	now, old := fpWith("--max-num-seqs", "256"), fpWith("--max-num-seqs", "128")
	tests := []struct {
		name   string
		h      baseline.Nights
		fp     *summary.Fingerprint
		change string
		first  int
	}{
		{name: "same recipe", h: nightsOf(now, now), fp: now},
		{name: "tonight changed the serve args", h: nightsOf(old, old), fp: now, change: "the recipe changed tonight: serve args (build #50 ran the old recipe)", first: 2},
		{name: "changed two nights ago", h: nightsOf(now, now, old), fp: now, change: "the recipe changed at build #49: serve args", first: 1},
		{name: "nights before fingerprints count as tonight's", h: nightsOf(now, nil), fp: now},
		{name: "tonight without a fingerprint", h: nightsOf(old, now), fp: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			change, first := RecipeChange(tt.h, tt.fp)
			if change != tt.change || first != tt.first {
				t.Errorf("RecipeChange() = %q, %d; want %q, %d", change, first, tt.change, tt.first)
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
