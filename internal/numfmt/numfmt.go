// Package numfmt writes numbers for people: thousands separators, a
// precision that suits the unit, and never exponent notation (1.782e+04 is
// for machines). Every number a person reads (annotations, the build
// report, gate and detector messages in summary.json, log lines) goes
// through it, so that one rule holds everywhere.
package numfmt

import (
	"math"
	"strconv"
	"strings"
)

// Thousands formats v with decimals digits after the point and a comma
// between each group of three digits before it: 17820.4 with 0 decimals
// is "17,820". NaN and infinities are "–".
func Thousands(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "−", s[1:]
	}
	whole, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	for i, d := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	if sign != "" && strings.Trim(b.String(), "0.,") == "" {
		sign = "" // no "−0.0"
	}
	return sign + b.String()
}

// Unit is how a metric's number reads.
type Unit int

// Units a number can be in.
const (
	// Plain is a number of no particular unit.
	Plain Unit = iota
	// TokensPerSec is a throughput.
	TokensPerSec
	// Millis is a latency in milliseconds.
	Millis
	// Percent is already a percentage (0–100).
	Percent
	// Score is an accuracy, a fraction 0–1.
	Score
)

// UnitOf guesses a metric's unit from its key, as vLLM and lm_eval name
// them.
func UnitOf(metric string) Unit {
	m := strings.ToLower(metric)
	switch {
	case strings.HasSuffix(m, "_ms"):
		return Millis
	case strings.Contains(m, "throughput"), strings.HasSuffix(m, "tok/s"):
		return TokensPerSec
	case strings.Contains(m, "acceptance_rate"), strings.HasSuffix(m, "_pct"):
		return Percent
	case strings.HasPrefix(m, "acc"), strings.HasPrefix(m, "exact_match"), strings.Contains(m, "score"), m == "f1", m == "em":
		return Score
	}
	return Plain
}

// Num formats v as a person reads a number in unit u: throughputs and
// large latencies whole with separators, small latencies with one or two
// decimals, percentages with one, scores with four.
func Num(v float64, u Unit) string {
	a := math.Abs(v)
	switch u {
	case TokensPerSec:
		if a >= 100 {
			return Thousands(v, 0)
		}
		return Thousands(v, 1)
	case Millis:
		switch {
		case a >= 100:
			return Thousands(v, 0)
		case a >= 10:
			return Thousands(v, 1)
		case a >= 1:
			return Thousands(v, 2)
		}
		// Below a millisecond (a fast TPOT): three significant digits.
		return sig(v, 3)
	case Percent:
		return Thousands(v, 1) + " %"
	case Score:
		return Thousands(v, 4)
	}
	switch {
	case a >= 100:
		return Thousands(v, 0)
	case a >= 1:
		return Thousands(v, 2)
	case a == 0:
		return "0"
	}
	// Small values: four significant digits, still without an exponent.
	return sig(v, 4)
}

// sig writes v, 0 < |v| < 1, with n significant digits (at most 12
// decimals), without an exponent.
func sig(v float64, n int) string {
	a := math.Abs(v)
	if a == 0 {
		return "0"
	}
	d := n - int(math.Floor(math.Log10(a))) - 1
	if d > 12 {
		d = 12
	}
	if d < 0 {
		d = 0
	}
	return Thousands(v, d)
}

// Sig writes v with n significant digits, as %.<n>g would but never with
// an exponent: trailing zeros dropped, thousands separated from 10,000 up
// (a bound beside it reads 1000 as the recipe wrote it), and a number
// with more whole digits than n written whole (17650.3 with 4 is
// "17,650", not "1.765e+04"; 0.000291 is "0.000291"). Texts that name a
// value in passing (gate and detector messages) use it.
func Sig(v float64, n int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	if v == 0 {
		return "0"
	}
	// Round to n significant digits first, so that 99.996 becomes 100.
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', n, 64), 64)
	if err != nil {
		r = v
	}
	d := n - int(math.Floor(math.Log10(math.Abs(r)))) - 1
	d = max(0, min(d, 12))
	s := Thousands(r, d)
	if math.Abs(r) < 10000 {
		s = strings.ReplaceAll(s, ",", "") // 1000, as a bound beside it is written
	}
	if strings.Contains(s, ".") {
		s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// P writes a p-value in passing, "= 0.00029" (two significant digits) or
// "< 0.0001", to follow a "p".
func P(p float64) string {
	if p < 0.0001 {
		return "< 0.0001"
	}
	return "= " + Sig(p, 2)
}

// Exact writes a value a person configured (a bound, a tolerance, a
// floor) as given: every digit it has, no separators, no exponent, so
// that it reads as the recipe wrote it.
func Exact(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// Pct is a signed percentage with one decimal, "+4.2 %" or "−12.3 %".
func Pct(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	s := Thousands(v, 1)
	if !strings.HasPrefix(s, "−") && s != "0.0" {
		s = "+" + s
	}
	return s + " %"
}

// PValue is a p-value as a statistician writes it: "= 0.032", or
// "< 0.0001" when it is smaller than four decimals show.
func PValue(p float64) string {
	if p < 0.0001 {
		return "< 0.0001"
	}
	s := strings.TrimRight(strconv.FormatFloat(p, 'f', 4, 64), "0")
	return "= " + strings.TrimSuffix(s, ".")
}
