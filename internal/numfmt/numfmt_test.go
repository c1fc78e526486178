package numfmt

import (
	"math"
	"strings"
	"testing"
)

func TestNumbers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		got, want string
	}{
		{Thousands(17820.4, 0), "17,820"},
		{Thousands(686817.0, 0), "686,817"},
		{Thousands(1234567.891, 2), "1,234,567.89"},
		{Thousands(999, 0), "999"},
		{Thousands(-1500, 0), "−1,500"},
		{Thousands(-0.01, 1), "0.0"},
		{Thousands(math.NaN(), 1), "–"},
		{Num(17820.4, TokensPerSec), "17,820"},
		{Num(42.25, TokensPerSec), "42.2"},
		{Num(1203.7, Millis), "1,204"},
		{Num(52.14, Millis), "52.1"},
		{Num(7.456, Millis), "7.46"},
		{Num(0.00412, Millis), "0.00412"},
		{Num(0.4567, Millis), "0.457"},
		{Num(0, Millis), "0"},
		{Num(17650.3, Plain), "17,650"},
		{Sig(17650.3, 4), "17,650"},
		{Sig(1765000, 4), "1,765,000"},
		{Sig(98, 4), "98"},
		{Sig(1000, 4), "1000"},
		{Sig(-2345.6, 4), "−2346"},
		{Sig(99.6, 4), "99.6"},
		{Sig(100.24, 4), "100.2"},
		{Sig(99.996, 4), "100"},
		{Sig(-0.000291234, 4), "−0.0002912"},
		{Sig(1e-15, 4), "0"},
		{Sig(0, 4), "0"},
		{P(0.0335), "= 0.034"},
		{P(0.00029), "= 0.00029"},
		{P(1), "= 1"},
		{P(3e-9), "< 0.0001"},
		{Exact(0.00001), "0.00001"},
		{Exact(20000), "20000"},
		{Exact(0.05), "0.05"},
		{Num(61.23, Percent), "61.2 %"},
		{Num(0.94012, Score), "0.9401"},
		{Num(1e-7, Plain), "0.0000001000"},
		{Num(3e9, Plain), "3,000,000,000"},
		{Pct(-12.345), "−12.3 %"},
		{Pct(4.21), "+4.2 %"},
		{Pct(0), "0.0 %"},
		{PValue(1e-9), "< 0.0001"},
		{PValue(0.0321), "= 0.0321"},
		{PValue(0.5), "= 0.5"},
	}
	for i, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("case %d = %q, want %q", i, tt.got, tt.want)
		}
		if strings.ContainsAny(tt.got, "eE") {
			t.Errorf("case %d = %q has an exponent", i, tt.got)
		}
	}
	for metric, want := range map[string]Unit{"output_throughput": TokensPerSec, "median_tpot_ms": Millis, "p99_ttft_ms": Millis,
		"spec_decode_acceptance_rate": Percent, "exact_match,flexible-extract": Score, "acc": Score, "request_goodput": Plain} {
		if got := UnitOf(metric); got != want {
			t.Errorf("UnitOf(%q) = %d, want %d", metric, got, want)
		}
	}
}
