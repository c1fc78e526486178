package detect

import (
	"math"
	"sync"
)

// Student's t distribution (location 0, scale 1), written here because
// the statistics library it came from was a third of what the runner
// compiled: the runner is built on every build's critical path.

// studentSurvival is P(T > t) for nu degrees of freedom.
func studentSurvival(t, nu float64) float64 {
	switch {
	case math.IsNaN(t) || math.IsNaN(nu) || nu <= 0:
		return math.NaN()
	case math.IsInf(t, 1):
		return 0
	case math.IsInf(t, -1):
		return 1
	}
	// P(|T| > |t|) = I_x(nu/2, 1/2) with x = nu/(nu+t²); 1-x is passed
	// as computed, not as 1-x, which is 0 for a tiny t.
	tail := 0.5 * regIncBeta(nu/2, 0.5, nu/(nu+t*t), t*t/(nu+t*t))
	if t < 0 {
		return 1 - tail
	}
	return tail
}

// studentQuantile is the t with P(T <= t) = p, found by bisection on the
// survival function down to adjacent floating-point numbers.
func studentQuantile(p, nu float64) float64 {
	switch {
	case math.IsNaN(p) || p < 0 || p > 1 || math.IsNaN(nu) || nu <= 0:
		return math.NaN()
	case p == 0:
		return math.Inf(-1)
	case p == 1:
		return math.Inf(1)
	case p == 0.5:
		return 0
	}
	// Solve in the upper tail, where the survival function is precise.
	q, sign := 1-p, 1.0
	if p < 0.5 {
		q, sign = p, -1
	}
	lo, hi := 0.0, 1.0
	for studentSurvival(hi, nu) > q {
		lo, hi = hi, hi*2
		if math.IsInf(hi, 1) {
			return sign * hi
		}
	}
	for range 2000 {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		if studentSurvival(mid, nu) > q {
			lo = mid
		} else {
			hi = mid
		}
	}
	return sign * (lo + (hi-lo)/2)
}

// regIncBeta is the regularized incomplete beta function I_x(a, b), y
// being 1-x, by its continued fraction (modified Lentz), on the side of x
// where it converges fast.
func regIncBeta(a, b, x, y float64) float64 {
	switch {
	case x <= 0:
		return 0
	case y <= 0:
		return 1
	case x > (a+1)/(a+b+2):
		return 1 - regIncBeta(b, a, y, x)
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(a*math.Log(x)+b*math.Log(y)-(la+lb-lab)) / a
	return front * betaFraction(a, b, x)
}

// betaFraction evaluates the continued fraction of I_x(a, b),
// 1/(1+d1/(1+d2/(1+...))), with
//
//	d(2m+1) = -(a+m)(a+b+m)x / ((a+2m)(a+2m+1))
//	d(2m)   = m(b-m)x / ((a+2m-1)(a+2m))
//
// by the modified Lentz method on its denominator 1+d1/(1+...).
func betaFraction(a, b, x float64) float64 {
	const (
		tiny = 1e-300
		eps  = 1e-16
	)
	clamp := func(v float64) float64 {
		if math.Abs(v) < tiny {
			return tiny
		}
		return v
	}
	f, c, d := 1.0, 1.0, 0.0
	for j := 1; j <= 10000; j++ {
		m := float64(j / 2)
		var dj float64
		if j%2 == 1 {
			dj = -(a + m) * (a + b + m) * x / ((a + 2*m) * (a + 2*m + 1))
		} else {
			dj = m * (b - m) * x / ((a + 2*m - 1) * (a + 2*m))
		}
		d = 1 / clamp(1+dj*d)
		c = clamp(1 + dj/c)
		delta := c * d
		f *= delta
		if math.Abs(delta-1) < eps {
			break
		}
	}
	return 1 / f
}

type quantileKey struct {
	p, df float64
}

// quantiles caches Student's t quantiles: calibration asks for the same
// few millions of times.
var quantiles sync.Map

func tQuantile(p, df float64) float64 {
	k := quantileKey{p, df}
	if q, ok := quantiles.Load(k); ok {
		return q.(float64)
	}
	q := studentQuantile(p, df)
	quantiles.Store(k, q)
	return q
}

// tSurvival is P(T > t) for Student's t with df degrees of freedom.
func tSurvival(t, df float64) float64 {
	if math.IsNaN(t) {
		return 1
	}
	if math.IsInf(t, 1) {
		return 0
	}
	return studentSurvival(t, df)
}

// bothBeyond is P(T₁ > m, T₂ > m) for two Student's t variates with nu
// degrees of freedom and correlation r that share their scale, as two
// nights judged with one estimate of the noise do: where that estimate
// is short, both nights look far off at once, so the two are not
// independent even at r = 0. It is 0 ≤ r < 1.
func bothBeyond(m, r, nu float64) float64 {
	if nu > 1e4 {
		return normalBothBeyond(m, r)
	}
	// T = Z/√(X/ν) with X ~ χ²(ν): average the normal orthant over X by
	// Simpson's rule, out to where X's density is negligible, in u = √X,
	// where the integrand is smooth at 0 (in X its slope is not).
	const steps = 400
	h := math.Sqrt(nu+12*math.Sqrt(2*nu)+40) / steps
	lgam, _ := math.Lgamma(nu / 2)
	logNorm := math.Ln2 - nu/2*math.Ln2 - lgam // of u's density, 2u·f(u²)
	sum := 0.0
	for i := 1; i <= steps; i++ { // u's density is 0 at 0
		u := float64(i) * h
		w := 2.0
		if i == steps {
			w = 1
		} else if i%2 == 1 {
			w = 4
		}
		dens := math.Exp(logNorm + (nu-1)*math.Log(u) - u*u/2)
		sum += w * dens * normalBothBeyond(m*u/math.Sqrt(nu), r)
	}
	return min(1, sum*h/3)
}

// normalBothBeyond is P(Z₁ > a, Z₂ > a) for standard normal variates of
// correlation r: P(Z₁ > a) times P(Z₂ > a) given Z₁ at its mean beyond
// a, which over-states the exact value by a few per cent at most for
// the a and r the two-night rule meets.
func normalBothBeyond(a, r float64) float64 {
	q := 0.5 * math.Erfc(a/math.Sqrt2)
	if q == 0 {
		return 0
	}
	beyond := math.Exp(-a*a/2) / math.Sqrt(2*math.Pi) / q // E[Z | Z > a]
	return q * 0.5 * math.Erfc((a-r*beyond)/math.Sqrt(2*(1-r*r)))
}
