package workloads

import (
	"sort"
	"strings"
)

// BFCLVersion is the bfcl-eval release whose categories the tables below
// copy (bfcl_eval/constants/category_mapping.py). The runner installs this
// version, so a recipe is checked against what will run.
const BFCLVersion = "2026.3.23"

// BFCL's leaf categories at BFCLVersion, group by group. format_sensitivity
// is left out: BFCL does not score it and skips it for function-calling
// models, which is how the runner registers every model.
var (
	bfclNonLive   = []string{"simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple", "irrelevance"}
	bfclLive      = []string{"live_simple", "live_multiple", "live_parallel", "live_parallel_multiple", "live_irrelevance", "live_relevance"}
	bfclMultiTurn = []string{"multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context"}
	bfclWebSearch = []string{"web_search_base", "web_search_no_snippet"}
	bfclMemory    = []string{"memory_kv", "memory_vector", "memory_rec_sum"}
)

// bfclGroups is TEST_COLLECTION_MAPPING at BFCLVersion, without the
// non-scoring format_sensitivity leaf in "all".
var bfclGroups = map[string][]string{
	"all":         concat(bfclNonLive, bfclLive, bfclMultiTurn, bfclMemory, bfclWebSearch),
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

// bfclCategoryProblem says what is wrong with a test category, or "".
func bfclCategoryProblem(category string) string {
	if category == "format_sensitivity" {
		return "bfcl test category format_sensitivity is not scored, and BFCL skips it for function-calling models"
	}
	if bfclUnscoredGroups[category] {
		leaves, _ := BFCLLeaves(category)
		return "bfcl test category " + category + " has no overall score in BFCL's score files; list its sub-categories (" + strings.Join(leaves, ", ") + ") or a scored group"
	}
	return ""
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
