package main

import (
	"math"
	"slices"
)

// The helpers below follow numpy: an empty sample counts as [0] (serve.py
// passes "values or 0"), std is the population standard deviation, and
// percentiles interpolate linearly between closest ranks.

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

func std(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	m := mean(xs)
	sum := 0.0
	for _, x := range xs {
		sum += (x - m) * (x - m)
	}
	return math.Sqrt(sum / float64(len(xs)))
}

func percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(rank))
	hi := int(math.Ceil(rank))
	return s[lo] + (s[hi]-s[lo])*(rank-float64(lo))
}

func median(xs []float64) float64 { return percentile(xs, 50) }

// summary is one latency metric in milliseconds.
type summary struct {
	mean, median, std float64
	percentiles       []float64 // aligned with the requested percentiles
}

func summarize(seconds []float64, ps []float64) summary {
	s := summary{mean: mean(seconds) * 1000, median: median(seconds) * 1000, std: std(seconds) * 1000}
	for _, p := range ps {
		s.percentiles = append(s.percentiles, percentile(seconds, p)*1000)
	}
	return s
}

// benchMetrics mirrors serve.py's BenchmarkMetrics.
type benchMetrics struct {
	completed, failed        int
	totalInput, totalOutput  int
	requestThroughput        float64
	requestGoodput           float64
	outputThroughput         float64
	totalTokenThroughput     float64
	ttft, tpot, itl, e2el    summary
	maxOutputTokensPerSecond float64
	maxConcurrentRequests    int
	outputLens               []int
}

// calculateMetrics follows serve.py's calculate_metrics.
func calculateMetrics(outs []requestOutput, dur float64, ps []float64, goodput map[string]float64) benchMetrics {
	var m benchMetrics
	var ttfts, tpots, allTPOTs, itls, e2els []float64
	var ok []requestOutput
	for _, o := range outs {
		if !o.success {
			m.outputLens = append(m.outputLens, 0)
			m.failed++
			continue
		}
		ok = append(ok, o)
		outLen := o.outputTokens
		if outLen == 0 {
			outLen = countWords(o.generatedText)
		}
		m.outputLens = append(m.outputLens, outLen)
		m.totalInput += o.promptLen
		m.totalOutput += outLen
		tpot := 0.0
		if outLen > 1 {
			tpot = (o.latency - o.ttft) / float64(outLen-1)
			tpots = append(tpots, tpot)
		}
		allTPOTs = append(allTPOTs, tpot)
		itls = append(itls, o.itl...)
		ttfts = append(ttfts, o.ttft)
		e2els = append(e2els, o.latency)
		m.completed++
	}

	good := 0
	if len(goodput) > 0 {
		for i := range ttfts {
			if v, set := goodput["ttft"]; set && v/1000 < ttfts[i] {
				continue
			}
			if v, set := goodput["tpot"]; set && v/1000 < allTPOTs[i] {
				continue
			}
			if v, set := goodput["e2el"]; set && v/1000 < e2els[i] {
				continue
			}
			good++
		}
	}

	m.maxOutputTokensPerSecond, m.maxConcurrentRequests = peaks(ok)
	m.requestThroughput = float64(m.completed) / dur
	m.requestGoodput = float64(good) / dur
	m.outputThroughput = float64(m.totalOutput) / dur
	m.totalTokenThroughput = float64(m.totalInput+m.totalOutput) / dur
	m.ttft, m.tpot, m.itl, m.e2el = summarize(ttfts, ps), summarize(tpots, ps), summarize(itls, ps), summarize(e2els, ps)
	return m
}

// peaks computes, as serve.py (vLLM 0.33.0) does, the busiest one-second
// bucket of output tokens and the largest number of requests active in
// one bucket: a request counts in every second from the one it starts in
// to the one it ends in, so a run shorter than a second reports all its
// requests, whatever --max-concurrency was.
func peaks(ok []requestOutput) (float64, int) {
	if len(ok) == 0 {
		return 0, 0
	}
	minStart, maxEnd := math.Inf(1), math.Inf(-1)
	for _, o := range ok {
		minStart = math.Min(minStart, o.startTime)
		maxEnd = math.Max(maxEnd, o.startTime+o.latency)
	}
	tokens := make([]float64, int(math.Ceil(maxEnd-minStart))+1)
	active := make([]int, len(tokens))
	for _, o := range ok {
		t := o.startTime + o.ttft
		times := []float64{t}
		for _, d := range o.itl {
			t += d
			times = append(times, t)
		}
		for _, tt := range times {
			if b := int(tt - minStart); b >= 0 && b < len(tokens) {
				tokens[b]++
			}
		}
		for sec := int(o.startTime - minStart); sec <= int(o.startTime+o.latency-minStart) && sec < len(active); sec++ {
			active[sec]++
		}
	}
	return slices.Max(tokens), slices.Max(active)
}
