package trend

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestNiceAxis(t *testing.T) {
	t.Parallel()
	tests := []struct {
		lo, hi       float64
		wantTicks    []float64
		wantDecimals int
	}{
		{lo: 0, hi: 100, wantTicks: []float64{0, 20, 40, 60, 80, 100}, wantDecimals: 0},
		{lo: 0, hi: 1, wantTicks: []float64{0, 0.2, 0.4, 0.6, 0.8, 1}, wantDecimals: 1},
		{lo: 0, hi: 0.8, wantTicks: []float64{0, 0.2, 0.4, 0.6, 0.8}, wantDecimals: 1},
		{lo: 1180, hi: 1320, wantTicks: []float64{1150, 1200, 1250, 1300, 1350}, wantDecimals: 0},
		{lo: 1043.2, hi: 1312.9, wantTicks: []float64{1000, 1100, 1200, 1300, 1400}, wantDecimals: 0},
		{lo: 0.912, hi: 0.951, wantTicks: []float64{0.91, 0.92, 0.93, 0.94, 0.95, 0.96}, wantDecimals: 2},
		{lo: 0.9, hi: 1.1, wantTicks: []float64{0.9, 0.95, 1, 1.05, 1.1}, wantDecimals: 2},
		{lo: -12, hi: 7, wantTicks: []float64{-15, -10, -5, 0, 5, 10}, wantDecimals: 0},
		{lo: -0.35, hi: -0.05, wantTicks: []float64{-0.4, -0.3, -0.2, -0.1, 0}, wantDecimals: 1},
		{lo: 3, hi: 5, wantTicks: []float64{3, 3.5, 4, 4.5, 5}, wantDecimals: 1},
		// 7 and 3 ticks are equally far from 5: the tighter axis wins.
		{lo: 0.55, hi: 1.45, wantTicks: []float64{0.5, 1, 1.5}, wantDecimals: 1},
		{lo: 2.5e6, hi: 2.9e6, wantTicks: []float64{2.5e6, 2.6e6, 2.7e6, 2.8e6, 2.9e6}, wantDecimals: 0},
		{lo: 1e-4, hi: 5e-4, wantTicks: []float64{1e-4, 2e-4, 3e-4, 4e-4, 5e-4}, wantDecimals: 4},
	}
	approx := cmpopts.EquateApprox(0, 1e-9)
	for _, tt := range tests {
		got := niceAxis(tt.lo, tt.hi)
		if diff := cmp.Diff(got.ticks, tt.wantTicks, approx); diff != "" {
			t.Errorf("niceAxis(%v, %v) ticks diff (-got +want):\n%s", tt.lo, tt.hi, diff)
		}
		if got.step.decimals() != tt.wantDecimals {
			t.Errorf("niceAxis(%v, %v) decimals = %d, want %d", tt.lo, tt.hi, got.step.decimals(), tt.wantDecimals)
		}
	}
}

// TestNiceAxisProperties checks, over many ranges, what every axis must
// satisfy: it covers the data, uses 1/2/5 steps, and has a readable number
// of ticks.
func TestNiceAxisProperties(t *testing.T) {
	t.Parallel()
	for lo := -3.0; lo < 3; lo += 0.37 {
		for _, span := range []float64{1e-3, 0.013, 0.4, 1, 2.7, 9.9, 10, 55, 1234} {
			hi := lo + span
			a := niceAxis(lo, hi)
			// Rounding may leave the data a hair outside, far below a pixel.
			if eps := a.step.value() * 1e-6; a.min() > lo+eps || a.max() < hi-eps {
				t.Errorf("niceAxis(%v, %v) = [%v, %v], does not cover the range", lo, hi, a.min(), a.max())
			}
			if n := len(a.ticks); n < 3 || n > 7 {
				t.Errorf("niceAxis(%v, %v) has %d ticks, want 3 to 7", lo, hi, n)
			}
			if m := a.step.mantissa; m != 1 && m != 2 && m != 5 {
				t.Errorf("niceAxis(%v, %v) step mantissa = %d, want 1, 2 or 5", lo, hi, m)
			}
			for _, tick := range a.ticks {
				if q := tick / a.step.value(); math.Abs(q-math.Round(q)) > 1e-6 {
					t.Errorf("niceAxis(%v, %v) tick %v is not a multiple of the step %v", lo, hi, tick, a.step.value())
				}
			}
		}
	}
}

func TestValueRange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		values         []float64
		wantLo, wantHi float64
	}{
		{values: []float64{3, 1, 2}, wantLo: 0.92, wantHi: 3.08},
		{values: []float64{-100, 0}, wantLo: -104, wantHi: 4},
		{values: []float64{1200, 1200}, wantLo: 1080, wantHi: 1320},
		{values: []float64{-5}, wantLo: -5.5, wantHi: -4.5},
		{values: []float64{0, 0}, wantLo: -1, wantHi: 1},
	}
	for _, tt := range tests {
		lo, hi := valueRange(tt.values)
		if lo != tt.wantLo || hi != tt.wantHi {
			t.Errorf("valueRange(%v) = %v, %v, want %v, %v", tt.values, lo, hi, tt.wantLo, tt.wantHi)
		}
	}
}

func TestFormatFixed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v        float64
		decimals int
		want     string
	}{
		{v: 0.30000000000000004, decimals: 1, want: "0.3"},
		{v: -0.0001, decimals: 2, want: "0.00"},
		{v: math.Copysign(0, -1), decimals: 0, want: "0"},
		{v: -1.25, decimals: 1, want: "-1.2"},
		{v: 1234.5, decimals: 0, want: "1234"},
	}
	for _, tt := range tests {
		if got := formatFixed(tt.v, tt.decimals); got != tt.want {
			t.Errorf("formatFixed(%v, %d) = %q, want %q", tt.v, tt.decimals, got, tt.want)
		}
	}
}
