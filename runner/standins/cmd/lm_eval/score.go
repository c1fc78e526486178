package main

import (
	"math"
	"regexp"
	"strings"
)

// filter is one of gsm8k.yaml's filter pipelines: a regex then take_first.
type filter struct {
	name        string
	regex       *regexp.Regexp
	groupSelect int
}

var filters = []filter{
	{name: "strict-match", regex: regexp.MustCompile(`#### (\-?[0-9\.\,]+)`), groupSelect: 0},
	{name: "flexible-extract", regex: regexp.MustCompile(`(-?[$0-9.,]{2,})|(-?[0-9]+)`), groupSelect: -1},
}

// apply follows lm-eval's RegexFilter: findall, pick group_select, take the
// first non-empty group of a tuple match, strip; "[invalid]" otherwise.
func (f filter) apply(resp string) string {
	matches := f.regex.FindAllStringSubmatch(resp, -1)
	if len(matches) == 0 {
		return "[invalid]"
	}
	i := f.groupSelect
	if i < 0 {
		i += len(matches)
	}
	if i < 0 || i >= len(matches) {
		return "[invalid]"
	}
	groups := matches[i][1:]
	if len(groups) == 0 {
		return strings.TrimSpace(matches[i][0])
	}
	for _, g := range groups {
		if g != "" {
			return strings.TrimSpace(g)
		}
	}
	return "[invalid]"
}

// ignore is gsm8k's regexes_to_ignore, applied to prediction and reference.
var ignore = []*regexp.Regexp{
	regexp.MustCompile(`,`), regexp.MustCompile(`\$`), regexp.MustCompile(`(?s).*#### `), regexp.MustCompile(`\.$`),
}

// exactMatch is lm-eval's exact_match with ignore_case and the ignores.
func exactMatch(pred, ref string) float64 {
	for _, re := range ignore {
		pred, ref = re.ReplaceAllString(pred, ""), re.ReplaceAllString(ref, "")
	}
	if strings.EqualFold(pred, ref) {
		return 1
	}
	return 0
}

// evaluation holds every per-document outcome.
type evaluation struct {
	docs     []doc
	prompts  []string
	resps    []string
	filtered map[string][]string  // filter name → per doc
	scores   map[string][]float64 // filter name → per doc
}

func score(docs []doc, prompts, resps []string) evaluation {
	ev := evaluation{docs: docs, prompts: prompts, resps: resps, filtered: map[string][]string{}, scores: map[string][]float64{}}
	for _, f := range filters {
		for i, d := range docs {
			got := f.apply(resps[i])
			ev.filtered[f.name] = append(ev.filtered[f.name], got)
			ev.scores[f.name] = append(ev.scores[f.name], exactMatch(got, d.Answer))
		}
	}
	return ev
}

// meanAndStderr gives the mean and lm-eval's mean_stderr (sample standard
// deviation over √n); the stderr is "N/A" for fewer than two items.
func meanAndStderr(xs []float64) (float64, any) {
	n := float64(len(xs))
	if n == 0 {
		return 0, "N/A"
	}
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	mean := sum / n
	if len(xs) < 2 {
		return mean, "N/A"
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/(n-1)) / math.Sqrt(n)
}
