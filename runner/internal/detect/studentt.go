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
