package paired

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/numfmt"
)

// Defaults of Options.
const (
	DefaultMetric = "exact_match"
	DefaultAlpha  = 0.01
	// DefaultMinPairs is the fewest paired questions the test decides on:
	// with fewer, a handful of broken answers can never reach
	// significance, and the comparison is unverified, with the count.
	DefaultMinPairs = 200
)

// Options say what to compare and when to fail.
type Options struct {
	// Metric is the per-document metric, DefaultMetric when empty. Its
	// values must be 0 or 1.
	Metric string
	// Filter picks the lm_eval filter, e.g. "strict-match"; empty means the
	// files must hold a single filter.
	Filter string
	// Alpha is the significance level; DefaultAlpha when zero.
	Alpha float64
	// MinPairs is the fewest paired documents to decide on;
	// DefaultMinPairs when zero.
	MinPairs int
	// MinAgreement, when positive, is the share of paired documents that
	// must be scored alike: greedy decoding with and without speculation
	// should agree as often as the run without it agrees with itself.
	MinAgreement float64
}

// Result is the paired comparison of a speculative run with a run without
// speculation. b and c are McNemar's discordant counts.
type Result struct {
	Metric, Filter string
	// Pairs is the documents in both runs; AgreeOutcome of them scored
	// alike and AgreeAnswer had identical filtered answers.
	Pairs, AgreeOutcome, AgreeAnswer int
	// OutcomeAgreement and AnswerAgreement are those as fractions of Pairs.
	OutcomeAgreement, AnswerAgreement float64
	// AnswersKnown is false when the baseline was stored outcomes, which
	// hold no answers: AgreeAnswer and AnswerAgreement are then zero.
	AnswersKnown bool
	// B is right without speculation and wrong with it; C the reverse.
	B, C int
	// BaselineScore and SpecScore are the mean metric over the pairs;
	// Delta is SpecScore − BaselineScore.
	BaselineScore, SpecScore, Delta float64
	// P is McNemar's exact one-sided p-value: the chance of B or more of
	// the B+C discordant documents going against speculation if it
	// changed nothing.
	P float64
	// UnmatchedBaseline and UnmatchedSpec count documents found in one
	// run only; they are left out of everything above.
	UnmatchedBaseline, UnmatchedSpec int
	Alpha, MinAgreement              float64
	MinPairs                         int
	// Unverified: fewer than MinPairs documents paired; Fail is false and
	// nothing was decided.
	Unverified bool
	Fail       bool
	// AgreementFail: the outcomes agreed less often than MinAgreement.
	AgreementFail bool
	Why           string
}

// CompareFiles reads two samples files and compares them.
func CompareFiles(baselinePath, specPath string, opts Options) (Result, error) {
	base, err := ReadFile(baselinePath)
	if err != nil {
		return Result{}, err
	}
	spec, err := ReadFile(specPath)
	if err != nil {
		return Result{}, err
	}
	return Compare(base, spec, opts)
}

// Compare pairs the speculative run's samples with the baseline's on
// doc_id and doc_hash, so that two documents asking the same question stay
// two, and tests whether speculation answers worse. McNemar's exact
// one-sided test on the discordant documents decides on its own: p below
// Alpha fails, whatever the means say.
func Compare(baseline, spec []Sample, opts Options) (Result, error) {
	opts, err := opts.check()
	if err != nil {
		return Result{}, err
	}
	filter, err := pickFilter(opts.Filter, baseline, spec)
	if err != nil {
		return Result{}, err
	}
	byHash := map[string]baseDoc{}
	for _, s := range baseline {
		if s.Filter == filter {
			byHash[DocKey(s.DocID, s.DocHash)] = baseDoc{value: func() (float64, error) { return outcome(s, opts.Metric) }, answer: s.Answer}
		}
	}
	return tally(byHash, spec, filter, opts, fileOf(baseline), true, false)
}

// Outcomes are a past run's stored per-document results under one metric
// and filter: whether each document was answered right, by DocKey, or by
// doc_hash alone for outcomes stored before doc ids were.
type Outcomes struct {
	// Source names the run in messages, e.g. "nospec #41".
	Source string
	Right  map[string]bool
	// ByHash: Right is keyed by doc_hash alone.
	ByHash bool
}

// DocKey is how documents pair: doc_id and doc_hash together.
func DocKey(id int, hash string) string { return fmt.Sprintf("%d:%s", id, hash) }

// CompareOutcomes is Compare with the run without speculation given by
// its stored outcomes under opts.Metric and opts.Filter. They hold no
// answers, so the result's AnswersKnown is false.
func CompareOutcomes(baseline Outcomes, spec []Sample, opts Options) (Result, error) {
	opts, err := opts.check()
	if err != nil {
		return Result{}, err
	}
	if len(baseline.Right) == 0 {
		return Result{}, fmt.Errorf("%w: %s has no outcomes", ErrInput, baseline.Source)
	}
	filter, err := pickFilter(opts.Filter, spec)
	if err != nil {
		return Result{}, err
	}
	byHash := make(map[string]baseDoc, len(baseline.Right))
	for h, right := range baseline.Right {
		v := 0.0
		if right {
			v = 1
		}
		byHash[h] = baseDoc{value: func() (float64, error) { return v, nil }}
	}
	return tally(byHash, spec, filter, opts, baseline.Source, false, baseline.ByHash)
}

func (opts Options) check() (Options, error) {
	if opts.Metric == "" {
		opts.Metric = DefaultMetric
	}
	if opts.Alpha == 0 {
		opts.Alpha = DefaultAlpha
	}
	if opts.MinPairs == 0 {
		opts.MinPairs = DefaultMinPairs
	}
	if !(opts.Alpha > 0 && opts.Alpha < 1) || !(opts.MinAgreement >= 0 && opts.MinAgreement <= 1) || opts.MinPairs < 1 {
		return opts, fmt.Errorf("%w: alpha %g must be in (0, 1), the minimum agreement %g in [0, 1] and the minimum pairs %d at least 1", ErrInput, opts.Alpha, opts.MinAgreement, opts.MinPairs)
	}
	return opts, nil
}

// baseDoc is one document of the run without speculation; its value is
// read only when it pairs, so an error names a document that mattered.
type baseDoc struct {
	value  func() (float64, error)
	answer string
}

// tally pairs spec's documents under filter with byHash and judges them;
// baseName names the baseline in errors, answers whether its answers are
// known, hashOnly whether byHash is keyed by doc_hash alone.
func tally(byHash map[string]baseDoc, spec []Sample, filter string, opts Options, baseName string, answers, hashOnly bool) (Result, error) {
	r := Result{Metric: opts.Metric, Filter: filter, Alpha: opts.Alpha, MinPairs: opts.MinPairs, MinAgreement: opts.MinAgreement, AnswersKnown: answers}
	matched := map[string]bool{}
	var baseSum, specSum float64
	for _, s := range spec {
		if s.Filter != filter {
			continue
		}
		key := DocKey(s.DocID, s.DocHash)
		if hashOnly {
			key = s.DocHash
		}
		b, ok := byHash[key]
		if !ok || matched[key] {
			r.UnmatchedSpec++
			continue
		}
		matched[key] = true
		bv, err := b.value()
		if err != nil {
			return Result{}, err
		}
		sv, err := outcome(s, opts.Metric)
		if err != nil {
			return Result{}, err
		}
		r.Pairs++
		baseSum += bv
		specSum += sv
		switch {
		case bv == sv:
			r.AgreeOutcome++
		case bv == 1:
			r.B++
		default:
			r.C++
		}
		if answers && b.answer == s.Answer {
			r.AgreeAnswer++
		}
	}
	r.UnmatchedBaseline = len(byHash) - len(matched)
	if r.Pairs == 0 {
		return Result{}, fmt.Errorf("%w: no document of %s is in %s (filter %q); are they runs of the same task?", ErrInput, fileOf(spec), baseName, filter)
	}
	n := float64(r.Pairs)
	r.OutcomeAgreement, r.AnswerAgreement = float64(r.AgreeOutcome)/n, float64(r.AgreeAnswer)/n
	r.BaselineScore, r.SpecScore = baseSum/n, specSum/n
	r.Delta = r.SpecScore - r.BaselineScore
	r.P = McNemarOneSided(r.B, r.C)

	r.decide(filter, opts, answers)
	return r, nil
}

// decide judges the tallied pairs: unverified below MinPairs, failed when
// speculation answers significantly worse or the outcomes agree less
// than expected; Why says so with the numbers.
func (r *Result) decide(filter string, opts Options, answers bool) {
	unmatched := ""
	if r.UnmatchedBaseline+r.UnmatchedSpec > 0 {
		unmatched = fmt.Sprintf("; %d documents only without speculation and %d only with it were left out", r.UnmatchedBaseline, r.UnmatchedSpec)
	}
	agree := fmt.Sprintf("answers identical on %.1f%%", r.AnswerAgreement*100)
	if !answers {
		agree = fmt.Sprintf("outcomes alike on %.1f%%", r.OutcomeAgreement*100)
	}
	head := fmt.Sprintf("%s %s over %d paired documents: %.4f with speculation vs %.4f without (Δ %+.4f); %d right only without, %d right only with (McNemar exact one-sided p %s); %s",
		filter, opts.Metric, r.Pairs, r.SpecScore, r.BaselineScore, r.Delta, r.B, r.C, numfmt.P(r.P), agree)
	if r.Pairs < opts.MinPairs {
		r.Unverified = true
		r.Why = fmt.Sprintf("unverified: only %d paired documents, %d needed to decide per question; %s%s", r.Pairs, opts.MinPairs, head, unmatched)
		return
	}
	r.Fail = r.P < opts.Alpha
	r.AgreementFail = opts.MinAgreement > 0 && r.OutcomeAgreement < opts.MinAgreement
	var why []string
	if r.Fail {
		why = append(why, fmt.Sprintf("speculation answers significantly worse (p < %s)", numfmt.Exact(opts.Alpha)))
	}
	if r.AgreementFail {
		why = append(why, fmt.Sprintf("the outcomes agree on %.1f%% of documents, below the %.1f%% expected", r.OutcomeAgreement*100, opts.MinAgreement*100))
	}
	switch {
	case len(why) > 0:
		r.Fail = true
		r.Why = fmt.Sprintf("fail: %s; %s%s", head, strings.Join(why, "; "), unmatched)
	default:
		r.Why = fmt.Sprintf("pass: %s; not significantly worse (p >= %s)%s", head, numfmt.Exact(opts.Alpha), unmatched)
	}
}

func fileOf(s []Sample) string {
	if len(s) == 0 {
		return "(no samples)"
	}
	return s[0].File
}

// pickFilter returns want, checking both runs have it, or the single
// filter both runs have.
func pickFilter(want string, runs ...[]Sample) (string, error) {
	var sets [][]string
	for _, run := range runs {
		var fs []string
		for _, s := range run {
			if !slices.Contains(fs, s.Filter) {
				fs = append(fs, s.Filter)
			}
		}
		slices.Sort(fs)
		sets = append(sets, fs)
	}
	if want != "" {
		for i, fs := range sets {
			if !slices.Contains(fs, want) {
				return "", fmt.Errorf("%w: %s has no filter %q (it has %s)", ErrInput, fileOf(runs[i]), want, strings.Join(fs, ", "))
			}
		}
		return want, nil
	}
	for i, fs := range sets {
		if len(fs) != 1 {
			return "", fmt.Errorf("%w: %s has filters %s; choose one", ErrInput, fileOf(runs[i]), strings.Join(fs, ", "))
		}
	}
	if sets[0][0] != sets[1][0] {
		return "", fmt.Errorf("%w: %s has filter %q and %s %q", ErrInput, fileOf(runs[0]), sets[0][0], fileOf(runs[1]), sets[1][0])
	}
	return sets[0][0], nil
}

// outcome is the 0/1 metric value of s.
func outcome(s Sample, metric string) (float64, error) {
	v, ok := s.Metrics[metric]
	if !ok {
		return 0, fmt.Errorf("%w: %s:%d: no metric %q", ErrInput, s.File, s.Line, metric)
	}
	if v != 0 && v != 1 {
		return 0, fmt.Errorf("%w: %s:%d: %s is %g; the paired test needs 0 or 1 per document", ErrInput, s.File, s.Line, metric, v)
	}
	return v, nil
}

// McNemarOneSided is the one-sided exact McNemar p-value that b, the
// documents right only without speculation, is this large by chance: the
// binomial(b+c, 1/2) probability of b or more.
func McNemarOneSided(b, c int) float64 {
	n := b + c
	if n == 0 || b == 0 {
		return 1
	}
	var sum float64
	lgN, _ := math.Lgamma(float64(n + 1))
	for i := b; i <= n; i++ {
		a, _ := math.Lgamma(float64(i + 1))
		z, _ := math.Lgamma(float64(n - i + 1))
		sum += math.Exp(lgN - a - z - float64(n)*math.Ln2)
	}
	return min(1, sum)
}

// McNemarExact is the two-sided exact McNemar p-value for discordant
// counts b and c: twice the binomial(b+c, 1/2) probability of a count at
// most min(b, c), capped at 1.
func McNemarExact(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	// Sum C(n, i)/2^n in logs: n can be a few thousand documents.
	var sum float64
	lgN, _ := math.Lgamma(float64(n + 1))
	for i := 0; i <= k; i++ {
		a, _ := math.Lgamma(float64(i + 1))
		z, _ := math.Lgamma(float64(n - i + 1))
		sum += math.Exp(lgN - a - z - float64(n)*math.Ln2)
	}
	return min(1, 2*sum)
}
