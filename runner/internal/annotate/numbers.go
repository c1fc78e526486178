package annotate

import "github.com/benchkite/benchkite/internal/numfmt"

// The numbers of annotations are numfmt's, the one formatter of every
// number a person reads; these names keep annotate's callers short.

// Unit is how a metric's number reads.
type Unit = numfmt.Unit

// Units a number can be in.
const (
	Plain        = numfmt.Plain
	TokensPerSec = numfmt.TokensPerSec
	Millis       = numfmt.Millis
	Percent      = numfmt.Percent
	Score        = numfmt.Score
)

// Thousands is numfmt.Thousands.
func Thousands(v float64, decimals int) string { return numfmt.Thousands(v, decimals) }

// UnitOf is numfmt.UnitOf.
func UnitOf(metric string) Unit { return numfmt.UnitOf(metric) }

// Num is numfmt.Num.
func Num(v float64, u Unit) string { return numfmt.Num(v, u) }

// Pct is numfmt.Pct.
func Pct(v float64) string { return numfmt.Pct(v) }

// PValue is numfmt.PValue.
func PValue(p float64) string { return numfmt.PValue(p) }
