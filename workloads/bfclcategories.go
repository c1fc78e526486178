package workloads

import (
	"slices"
	"sort"
	"strings"
)

// BFCLVersion is the bfcl-eval release whose categories the tables below
// copy (bfcl_eval/constants/category_mapping.py). The runner installs this
// version, so a recipe is checked against what will run.
const BFCLVersion = "2026.3.23"

// BFCL's leaf categories at BFCLVersion, group by group.
var (
	bfclNonLive   = []string{"simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple", "irrelevance"}
	bfclLive      = []string{"live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance", "live_relevance"}
	bfclMultiTurn = []string{"multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"}
	bfclWebSearch = []string{"web_search_base", "web_search_no_snippet"}
	bfclMemory    = []string{"memory_kv", "memory_vector", "memory_rec_sum"}
	// bfclNonScoring is NON_SCORING_CATEGORY: BFCL reports no accuracy
	// for it, and its generate skips it for function-calling models,
	// which is how the runner registers every model.
	bfclNonScoring = []string{"format_sensitivity"}
)

// bfclGroups is TEST_COLLECTION_MAPPING at BFCLVersion. "all" holds
// format_sensitivity, as bfcl_eval's parse_test_category_argument expands it.
var bfclGroups = map[string][]string{
	"all":         concat(bfclNonLive, bfclLive, bfclMultiTurn, bfclMemory, bfclWebSearch, bfclNonScoring),
	"all_scoring": concat(bfclNonLive, bfclLive, bfclMultiTurn, bfclMemory, bfclWebSearch),
	"multi_turn":  bfclMultiTurn,
	"single_turn": concat(bfclNonLive, bfclLive),
	"live":        bfclLive,
	"non_live":    bfclNonLive,
	"non_python":  {"simple_java", "simple_javascript"},
	"python": {"simple_python", "irrelevance", "parallel", "multiple", "parallel_multiple",
		"live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance", "live_relevance"},
	"memory":     bfclMemory,
	"web_search": bfclWebSearch,
	"agentic":    concat(bfclMemory, bfclWebSearch),
}

// bfclUnscoredGroups are groups whose score files carry no overall column,
// so a run of them would have no score of its own.
var bfclUnscoredGroups = map[string]bool{"single_turn": true, "python": true, "non_python": true}

func concat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// BFCLLeaves returns the leaf categories BFCL runs for category, in the
// order bfcl_eval.utils.parse_test_category_argument returns them (sorted);
// a leaf is its own only leaf. ok is false for a name BFCL does not know.
func BFCLLeaves(category string) (leaves []string, ok bool) {
	if g, isGroup := bfclGroups[category]; isGroup {
		out := append([]string(nil), g...)
		sort.Strings(out)
		return out, true
	}
	for _, leaf := range bfclGroups["all"] {
		if leaf == category {
			return []string{leaf}, true
		}
	}
	return nil, false
}

// BFCLIsGroup reports whether category names a group of leaves.
func BFCLIsGroup(category string) bool {
	_, ok := bfclGroups[category]
	return ok
}

// bfclKeys are the leaves that need a key the runner does not pass to BFCL,
// and the key: bfcl_eval's WebSearchAPI sends every search to SerpAPI with
// SERPAPI_API_KEY, and without it each search fails and the model answers
// blind.
var bfclKeys = map[string]string{
	"web_search_base":       "SERPAPI_API_KEY",
	"web_search_no_snippet": "SERPAPI_API_KEY",
}

// BFCLMinEntriesPerLeaf is the fewest test entries a subsampled leaf may
// have: BFCL's evaluation takes statistics.stdev of the latencies
// (eval_runner_helper.get_cost_latency_info), which raises on one.
const BFCLMinEntriesPerLeaf = 2

// bfclCategoryProblem says why the runner cannot run a test category, or "".
func bfclCategoryProblem(category string) string {
	if category == "format_sensitivity" {
		return "bfcl test category format_sensitivity is not scored, and BFCL skips it for function-calling models"
	}
	if bfclUnscoredGroups[category] {
		leaves, _ := BFCLLeaves(category)
		return "bfcl test category " + category + " has no overall score in BFCL's score files; list its sub-categories (" + strings.Join(leaves, ", ") + ") or a scored group"
	}
	leaves, ok := BFCLLeaves(category)
	if !ok {
		return ""
	}
	if slices.Contains(leaves, "format_sensitivity") {
		return "bfcl test category " + category + " expands, in bfcl-eval " + BFCLVersion + ", to every category and format_sensitivity, which BFCL does not score and skips for function-calling models (as the runner registers every model), so the run cannot finish; list the groups to run instead, such as non_live, live, multi_turn and memory"
	}
	var keyed []string
	keys := map[string]bool{}
	for _, leaf := range leaves {
		if k, needs := bfclKeys[leaf]; needs {
			keyed = append(keyed, leaf)
			keys[k] = true
		}
	}
	if len(keyed) == 0 {
		return ""
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	what := "bfcl test category " + category + " needs "
	if len(leaves) > 1 {
		what = "bfcl test category " + category + " runs " + strings.Join(keyed, ", ") + ", which need "
	}
	msg := what + strings.Join(names, ", ") + " (bfcl_eval's web search calls SerpAPI with it); the runner does not pass it, so every search would fail and the score read near zero"
	if rest := without(leaves, keyed); len(rest) > 0 {
		msg += "; list the other sub-categories instead: " + strings.Join(rest, ", ")
	}
	return msg
}

func without(list, drop []string) []string {
	var out []string
	for _, s := range list {
		if !slices.Contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}

// bfclKnownCategories lists every category a recipe may name, for hints.
func bfclKnownCategories() []string {
	var out []string
	for g := range bfclGroups {
		if !bfclUnscoredGroups[g] {
			out = append(out, g)
		}
	}
	out = append(out, bfclGroups["all"]...)
	sort.Strings(out)
	return out
}
