package main

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/openai"
)

// doc is one invented gsm8k-style problem.
type doc struct {
	Question string
	Answer   string // "A op B = R\n#### R", the shape of gsm8k answers
}

const (
	testSeed    = 1
	trainSeed   = 2
	fewshotPool = 20
	fewshotSeed = 1234
)

var ops = []string{"+", "-", "*"}

func problem(rng *rand.Rand, maxOperand int) doc {
	a, b, op := 2+rng.IntN(maxOperand-1), 2+rng.IntN(maxOperand-1), ops[rng.IntN(len(ops))]
	r := map[string]int{"+": a + b, "-": a - b, "*": a * b}[op]
	return doc{
		Question: fmt.Sprintf("What is %d %s %d?", a, op, b),
		Answer:   fmt.Sprintf("%d %s %d = %d\n#### %d", a, op, b, r, r),
	}
}

// makeDocs invents the n test problems. Problem i is picked so that its
// server score (openai.QuestionScore) lies within 1/n of the i-th point of
// the base-2 van der Corput sequence. Every prefix of the dataset then
// spreads evenly over [0, 1), so the exact match of the first k problems
// tracks the server's configured accuracy closely, --limit or not.
func makeDocs(n int, seed uint64) []doc {
	rng := rand.New(rand.NewPCG(seed, 0x65736d38))
	seen := map[string]bool{}
	docs := make([]doc, 0, n)
	width := 1 / float64(n)
	for i := range n {
		lo := vanDerCorput(uint64(i))
		for tries := 1; ; tries++ {
			if tries%(50*n) == 0 {
				width *= 2 // the window is too crowded; accept a looser fit
			}
			d := problem(rng, 999)
			if s := openai.QuestionScore(d.Question); seen[d.Question] || s < lo || s >= lo+width {
				continue
			}
			seen[d.Question] = true
			docs = append(docs, d)
			break
		}
	}
	return docs
}

// makeFewshotPool invents the small-number examples shown before each
// question; their scores do not matter.
func makeFewshotPool(n int, seed uint64) []doc {
	rng := rand.New(rand.NewPCG(seed, 0x65736d38))
	seen := map[string]bool{}
	var docs []doc
	for len(docs) < n {
		if d := problem(rng, 99); !seen[d.Question] {
			seen[d.Question] = true
			docs = append(docs, d)
		}
	}
	return docs
}

// vanDerCorput is the i-th point of the base-2 van der Corput sequence.
func vanDerCorput(i uint64) float64 {
	v, f := 0.0, 0.5
	for ; i > 0; i >>= 1 {
		if i&1 == 1 {
			v += f
		}
		f /= 2
	}
	return v
}

// docToText and the target delimiter follow gsm8k.yaml.
func docToText(d doc) string { return "Question: " + d.Question + "\nAnswer:" }

// buildPrompt prepends k examples from the few-shot pool, chosen per
// document with a fixed seed, joined the way lm-eval joins them.
func buildPrompt(d doc, pool []doc, k, docID int) string {
	rng := rand.New(rand.NewPCG(fewshotSeed, uint64(docID)))
	var parts []string
	for _, i := range rng.Perm(len(pool))[:min(k, len(pool))] {
		parts = append(parts, docToText(pool[i])+" "+pool[i].Answer)
	}
	return strings.Join(append(parts, docToText(d)), "\n\n")
}
