package detect

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestChangePoints(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		series []float64
		want   []Change
	}{
		{
			// Q(τ=1) = Q(3) = 3/4·(2·22/3 − 20/3) = 6; Q(2) = 1·(2·10 − 1 − 1) = 18.
			// t = 10/√(0.5·(1/2+1/2)) = √200 with 2 df: p = 1 − √(200/202).
			name:   "clean step, 2 df",
			series: []float64{0, 1, 10, 11},
			want:   []Change{{Index: 2, P: 1 - math.Sqrt(200.0/202), Q: 18, Before: 0.5, After: 10.5}},
		},
		{
			// A ramp 0..7: Q is 14/3, 7, 35/4, 28/3, 35/4, 7, 14/3, so the
			// middle; t = 4/√(5/3·(1/4+1/4)) with 6 df gives p = 0.0046592
			// (numerical integration of the t density). Each half, split in
			// two, has t = √8 with 2 df: p = 1 − √(8/10) = 0.106, not
			// significant.
			name:   "slow drift",
			series: []float64{0, 1, 2, 3, 4, 5, 6, 7},
			want:   []Change{{Index: 4, P: 0.0046592149, Q: 28.0 / 3, Before: 1.5, After: 5.5}},
		},
		{
			name:   "two steps",
			series: []float64{0, 0.1, 0, 0.1, 5, 5.1, 5, 5.1, 10, 10.1, 10, 10.1},
			want: []Change{
				{Index: 4, Before: 0.05, After: 5.05}, // found first; the merge step judges it between its neighbours
				{Index: 8, Before: 5.05, After: 10.05},
			},
		},
		{
			// Q is largest at the ends (0.065 at τ=1 and τ=9, the first
			// wins); 10 against the other nine gives t = 0.314, p = 0.76.
			name:   "single outlier night",
			series: []float64{10, 10.2, 9.8, 10.1, 9.9, 14, 10, 10.2, 9.8, 10},
		},
		{name: "flat", series: []float64{3, 3, 3, 3, 3}},
		{name: "two nights", series: []float64{1, 100}},
		{name: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ChangePoints(tt.series, 0.05)
			opts := cmp.Options{cmpopts.EquateApprox(0, 1e-8), cmpopts.EquateEmpty()}
			if tt.name == "two steps" {
				opts = append(opts, cmpopts.IgnoreFields(Change{}, "P", "Q"))
			}
			if diff := cmp.Diff(got, tt.want, opts...); diff != "" {
				t.Errorf("ChangePoints(%v) diff (-got +want):\n%s", tt.series, diff)
			}
		})
	}
}

func TestChangePointLatest(t *testing.T) {
	t.Parallel()
	series := []float64{0, 0.1, 0, 0.1, 5, 5.1, 5, 5.1, 10, 10.1, 10, 10.1}
	idx, p, ok := latestChange(series, 0.05)
	if !ok || idx != 8 || !(p < 0.05) {
		t.Errorf("latestChange(%v) = %d, %g, %v; want 8, p < 0.05, true", series, idx, p, ok)
	}
	idx, p, ok = latestChange([]float64{1, 1.1}, 0.05)
	if ok || p != 1 {
		t.Errorf("latestChange(two nights) = %d, %g, %v; want no change, p 1", idx, p, ok)
	}
}

func TestChangePointNoisyStep(t *testing.T) {
	t.Parallel()
	// Tonight's regression: the last three nights are 20 % down.
	series := []float64{100, 102, 98, 101, 99, 100, 103, 97, 80, 81, 79}
	idx, p, ok := latestChange(series, 0.01)
	if !ok || idx != 8 {
		t.Fatalf("latestChange(%v) = %d, %g, %v; want index 8", series, idx, p, ok)
	}
	if cs := ChangePoints(series, 0.01); len(cs) != 1 {
		t.Errorf("ChangePoints(%v) = %+v; want exactly one change", series, cs)
	}
}

func TestEnergyQ(t *testing.T) {
	t.Parallel()
	// X = [10 10 10], Y = [10 20 20 20 20]: between mean 8, within Y 4,
	// so Q = 15/8·(16 − 4) = 22.5; at the true split Q = 2·20 = 40.
	x := []float64{10, 10, 10, 10, 20, 20, 20, 20}
	if got := energyQ(x[:3], x[3:]); math.Abs(got-22.5) > 1e-12 {
		t.Errorf("energyQ(τ=3) = %v, want 22.5", got)
	}
	if got := energyQ(x[:4], x[4:]); math.Abs(got-40) > 1e-12 {
		t.Errorf("energyQ(τ=4) = %v, want 40", got)
	}
}

// latestChange returns the latest significant change in series (the one a
// regression flagged tonight is about): index is the first value after it,
// so callers name series[index-1]'s night the last good and series[index]'s
// the first bad. ok is false when no split is significant at level alpha
// or the series has fewer than three values.
func latestChange(series []float64, alpha float64) (index int, p float64, ok bool) {
	cs := ChangePoints(series, alpha)
	if len(cs) == 0 {
		return 0, 1, false
	}
	last := cs[len(cs)-1]
	return last.Index, last.P, true
}

// energyQ is the textbook O(mn) statistic the O(n²) bestSplit must equal:
//
//	Q = mn/(m+n) · ( 2/(mn) Σ|Xi−Yj| − C(m,2)⁻¹ Σ|Xi−Xk| − C(n,2)⁻¹ Σ|Yj−Yk| )
func energyQ(x, y []float64) float64 {
	m, n := float64(len(x)), float64(len(y))
	var between float64
	for _, a := range x {
		for _, b := range y {
			between += math.Abs(a - b)
		}
	}
	within := func(x []float64) float64 {
		if len(x) < 2 {
			return 0
		}
		var sum float64
		for i := range x {
			for k := i + 1; k < len(x); k++ {
				sum += math.Abs(x[i] - x[k])
			}
		}
		n := float64(len(x))
		return sum / (n * (n - 1) / 2)
	}
	return m * n / (m + n) * (2*between/(m*n) - within(x) - within(y))
}

func TestBestSplitMatchesEnergyQ(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 3 + rng.IntN(30)
		x := make([]float64, n)
		for i := range x {
			x[i] = rng.NormFloat64()
			if i > n/2 && trial%2 == 0 {
				x[i] += 2
			}
		}
		minSeg := 1 + trial%3
		tau, q, ok := bestSplit(x, minSeg)
		if n < 2*minSeg {
			if ok {
				t.Errorf("bestSplit(%d values, min %d) found a split", n, minSeg)
			}
			continue
		}
		wantTau, wantQ := 0, math.Inf(-1)
		for t := minSeg; t <= n-minSeg; t++ {
			if v := energyQ(x[:t], x[t:]); t == minSeg || v > wantQ+1e-12*math.Abs(wantQ) {
				wantTau, wantQ = t, v
			}
		}
		if !ok || tau != wantTau || math.Abs(q-wantQ) > 1e-9*math.Max(1, math.Abs(wantQ)) {
			t.Errorf("bestSplit(%v, %d) = %d, %v, %v; want %d, %v", x, minSeg, tau, q, ok, wantTau, wantQ)
		}
	}
}

func TestSearchKnownAndMerge(t *testing.T) {
	t.Parallel()
	// A known change at 5 with no step in the values stays; a step at 10
	// is found; nothing else survives the merge at 0.001.
	series := []float64{10, 10.2, 9.8, 10.1, 9.9, 10, 10.1, 9.9, 10.2, 9.8, 12, 12.1, 11.9, 12.2, 11.8, 12}
	got := Search{Alpha: 0.001, MinSegment: 3, Known: []int{5}}.Find(series)
	if len(got) != 2 || got[0].Index != 5 || !got[0].Known || got[1].Index != 10 || got[1].Known || !(got[1].P < 0.001) {
		t.Errorf("Find() = %+v; want the known change at 5 and a found one at 10", got)
	}
	// A single odd last night is no change with a minimum segment of 3.
	odd := []float64{10, 10.2, 9.8, 10.1, 9.9, 10, 10.1, 9.9, 10.2, 13}
	if got := (Search{Alpha: 0.001, MinSegment: 3}).Find(odd); len(got) != 0 {
		t.Errorf("Find(odd last night) = %+v; want none", got)
	}
}
