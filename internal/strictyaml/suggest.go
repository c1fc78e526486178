package strictyaml

import (
	"sort"
	"strings"
)

// Suggest returns the candidate closest to s, if it is close enough to be a
// likely typo.
func Suggest(s string, candidates []string) string {
	best, bestDist := "", 1<<30
	for _, c := range candidates {
		if dist := levenshtein(strings.ToLower(s), strings.ToLower(c)); dist < bestDist {
			best, bestDist = c, dist
		}
	}
	limit := 2
	if len(s) > 8 {
		limit = 3
	}
	if bestDist <= limit {
		return best
	}
	return ""
}

// Closest returns up to n candidates ordered by edit distance to s, for
// "did you mean" lists.
func Closest(s string, candidates []string, n int) []string {
	type scored struct {
		c string
		d int
	}
	var all []scored
	for _, c := range candidates {
		d := levenshtein(strings.ToLower(s), strings.ToLower(c))
		if strings.Contains(strings.ToLower(c), strings.ToLower(s)) {
			d = 0
		}
		if d <= len(s)/2+2 {
			all = append(all, scored{c, d})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].d != all[j].d {
			return all[i].d < all[j].d
		}
		return all[i].c < all[j].c
	})
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].c)
	}
	return out
}

// Distance is the edit distance between a and b, in runes.
func Distance(a, b string) int { return levenshtein(a, b) }

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
