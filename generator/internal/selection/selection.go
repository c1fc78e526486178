package selection

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"github.com/benchkite/benchkite/workloads"
)

// Mode is why a build runs what it runs.
type Mode string

const (
	ModeExplicit Mode = "explicit" // WORKLOADS named the recipes
	ModeNightly  Mode = "nightly"  // a scheduled build
	ModeDefault  Mode = "default"  // not a PR, not scheduled: the nightly set
	ModePR       Mode = "pr"       // the recipes a pull request touches
)

// BuildEnv is what selection reads from the build's environment.
type BuildEnv struct {
	Workloads   string // WORKLOADS
	Source      string // BUILDKITE_SOURCE
	PullRequest string // BUILDKITE_PULL_REQUEST
	BaseBranch  string // BUILDKITE_PULL_REQUEST_BASE_BRANCH
	BenchOnly   bool   // BENCH_ONLY
}

func ReadBuildEnv(getenv func(string) string) BuildEnv {
	return BuildEnv{
		Workloads:   getenv("WORKLOADS"),
		Source:      getenv("BUILDKITE_SOURCE"),
		PullRequest: getenv("BUILDKITE_PULL_REQUEST"),
		BaseBranch:  getenv("BUILDKITE_PULL_REQUEST_BASE_BRANCH"),
		BenchOnly:   IsTrue(getenv("BENCH_ONLY")),
	}
}

func IsTrue(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// IsPR says whether the build is for a pull request.
func (e BuildEnv) IsPR() bool {
	n, err := strconv.Atoi(e.PullRequest)
	return err == nil && n > 0
}

// Changes is what a pull request changed, as far as selection cares.
type Changes struct {
	// Files are repository paths added or modified (not deleted).
	Files []string
	// Profiles are the GPUs whose profile changed.
	Profiles []string
	// Fetches are the git fetches it took to find the merge base, for the
	// notes.
	Fetches []string
	// Err is set when git could not answer; the build then runs no recipe
	// and says why (a guess would cost hours of GPUs).
	Err error
}

// Selected is one recipe the build runs.
type Selected struct {
	Recipe *workloads.Recipe
	// Why it was picked, for the notes.
	Why string
	// SoftFail: a blocked recipe asked for explicitly; its red bring-up is
	// expected and must not fail the build.
	SoftFail bool
}

// InvalidRecipe is a recipe file that failed validation and is part of
// this build's set: it becomes a failing CPU step, never a GPU job.
type InvalidRecipe struct {
	Path     string
	Problems strictyaml.Problems
}

// Skipped is a recipe left out, with the reason.
type Skipped struct {
	Name   string
	Path   string
	Reason string
}

// Selection is what a build runs, and why.
type Selection struct {
	Mode     Mode
	Runs     []Selected
	Invalid  []InvalidRecipe
	Skipped  []Skipped
	Notes    []string
	Nightly  bool // scheduled: steps get NIGHTLY=1
	BenchOff bool // BENCH_ONLY for the whole build
	Changed  []string
	// Unknown is set for a PR build whose changes could not be found: it
	// runs nothing, and the pipeline fails on a CPU step that says why.
	Unknown string
}

// Select picks the recipes of a build. It is a pure function of the
// catalog, the build env and, for pull requests, the changes.
func Select(cat *workloads.Catalog, env BuildEnv, changes *Changes) (*Selection, error) {
	sel := &Selection{Nightly: env.Source == "schedule", BenchOff: env.BenchOnly}
	switch {
	case strings.TrimSpace(env.Workloads) != "":
		sel.Mode = ModeExplicit
		return sel, selectExplicit(sel, cat, env.Workloads)
	case sel.Nightly:
		sel.Mode = ModeNightly
		selectNightly(sel, cat, "scheduled build")
	case env.IsPR():
		sel.Mode = ModePR
		if changes == nil || changes.Err != nil {
			reason := "no change list"
			if changes != nil {
				reason = changes.Err.Error()
			}
			sel.Unknown = fmt.Sprintf("Could not tell what PR #%s changed. Git answered: %s\n"+
				"No GPU step runs: guessing would cost hours of GPUs for a checkout detail. "+
				"Start a new build with WORKLOADS set to choose recipes (WORKLOADS=name,name or a recipe path), "+
				"or fix the checkout (BUILDKITE_GIT_CLONE_FLAGS, the base branch) and rebuild.", env.PullRequest, reason)
			sel.Notes = append(sel.Notes, sel.Unknown)
			return sel, nil
		}
		if len(changes.Fetches) > 0 {
			sel.Notes = append(sel.Notes, "The checkout was shallow; found the merge base after: "+strings.Join(changes.Fetches, ", then ")+".")
		}
		selectPR(sel, cat, changes)
	default:
		sel.Mode = ModeDefault
		selectNightly(sel, cat, "nightly set (not a PR, no WORKLOADS)")
	}
	return sel, nil
}

func selectNightly(sel *Selection, cat *workloads.Catalog, why string) {
	for _, r := range cat.Recipes {
		switch {
		case !r.Nightly:
			sel.Skipped = append(sel.Skipped, Skipped{Name: r.Name, Path: r.Path, Reason: "nightly: false"})
		case len(r.BlockedBy) > 0:
			sel.Skipped = append(sel.Skipped, Skipped{Name: r.Name, Path: r.Path, Reason: "blocked by " + strings.Join(r.BlockedBy, ", ")})
		default:
			sel.Runs = append(sel.Runs, Selected{Recipe: r, Why: why})
		}
	}
	// Invalid files cannot say whether they are nightly; a nightly that
	// silently drops a broken recipe would read as green.
	sel.Invalid = allInvalid(cat)
}

func allInvalid(cat *workloads.Catalog) []InvalidRecipe {
	var out []InvalidRecipe
	for _, p := range slices.Sorted(maps.Keys(cat.Invalid)) {
		out = append(out, InvalidRecipe{Path: p, Problems: cat.Invalid[p]})
	}
	return out
}

// SplitList splits WORKLOADS on commas and newlines.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == '\n' || r == '\r' }) {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func selectExplicit(sel *Selection, cat *workloads.Catalog, list string) error {
	seen := map[string]bool{}
	var missing []string
	var candidates []string
	for _, r := range cat.Recipes {
		candidates = append(candidates, r.Name)
	}
	for _, want := range SplitList(list) {
		found := false
		for _, r := range cat.Recipes {
			if !MatchesRecipe(r.Path, r.Name, want) {
				continue
			}
			found = true
			if seen[r.Path] {
				continue
			}
			seen[r.Path] = true
			s := Selected{Recipe: r, Why: "WORKLOADS: " + want}
			if len(r.BlockedBy) > 0 {
				s.SoftFail = true
				s.Why += " (blocked by " + strings.Join(r.BlockedBy, ", ") + ": soft fail)"
			}
			sel.Runs = append(sel.Runs, s)
		}
		for _, p := range slices.Sorted(maps.Keys(cat.Invalid)) {
			if MatchesRecipe(p, "", want) {
				found = true
				if !seen[p] {
					seen[p] = true
					sel.Invalid = append(sel.Invalid, InvalidRecipe{Path: p, Problems: cat.Invalid[p]})
				}
			}
		}
		if !found {
			missing = append(missing, want+CloseMatches(want, candidates))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("WORKLOADS names no recipe: %s", strings.Join(missing, "; "))
	}
	if len(sel.Runs) == 0 && len(sel.Invalid) == 0 {
		return fmt.Errorf("WORKLOADS is set but names nothing")
	}
	return nil
}

func CloseMatches(want string, candidates []string) string {
	uniq := map[string]bool{}
	var list []string
	for _, c := range candidates {
		if !uniq[c] {
			uniq[c] = true
			list = append(list, c)
		}
	}
	if close := strictyaml.Closest(want, list, 3); len(close) > 0 {
		return " (close: " + strings.Join(close, ", ") + ")"
	}
	return ""
}

func selectPR(sel *Selection, cat *workloads.Catalog, ch *Changes) {
	sel.Changed = ch.Files
	changed := map[string]bool{}
	for _, f := range ch.Files {
		changed[absPath(f)] = true
	}
	profileChanged := map[string]bool{}
	for _, g := range ch.Profiles {
		profileChanged[g] = true
	}
	for _, r := range cat.Recipes {
		var why string
		switch {
		case changed[absPath(r.Path)]:
			why = "changed in this PR"
		case profileChanged[r.GPU]:
			why = "its GPU profile (" + r.GPU + ") changed in this PR"
		default:
			continue
		}
		s := Selected{Recipe: r, Why: why}
		if len(r.BlockedBy) > 0 {
			s.SoftFail = true
			s.Why += " (blocked by " + strings.Join(r.BlockedBy, ", ") + ": soft fail)"
		}
		sel.Runs = append(sel.Runs, s)
	}
	for _, p := range slices.Sorted(maps.Keys(cat.Invalid)) {
		if changed[absPath(p)] {
			sel.Invalid = append(sel.Invalid, InvalidRecipe{Path: p, Problems: cat.Invalid[p]})
		}
	}
	if len(sel.Runs) == 0 && len(sel.Invalid) == 0 {
		sel.Notes = append(sel.Notes, "This PR changes no recipe and no GPU profile, so no GPU step runs. Set WORKLOADS on a new build to run recipes anyway.")
	}
}

// MatchesRecipe says whether want (a name, a path or a file name, with or
// without .yaml) names the recipe at p called name.
func MatchesRecipe(p, name, want string) bool {
	want = strings.TrimPrefix(want, "./")
	if want == "" {
		// An invalid file has no name; "" must not find it.
		return false
	}
	base := path.Base(p)
	return want == name || want == p || want == base || want+".yaml" == base ||
		(strings.HasSuffix(want, "/"+base) && path.Base(want) == base)
}
