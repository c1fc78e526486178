package bfcl

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/workloads"
)

// Version is the bfcl-eval release the driver and the score parser follow.
const Version = workloads.BFCLVersion

// Defaults for settings a recipe leaves out.
const (
	// DefaultNumThreads is BFCL's own for API handlers such as
	// OpenAICompletionsHandler.
	DefaultNumThreads = 1
	// DefaultTemperature is the default of BFCL's generate command.
	DefaultTemperature = 0.001
	// DefaultMaximumStepLimit is perf-eval's; BFCL's own is 20.
	DefaultMaximumStepLimit = 10
)

// Environment variables that win over the recipe.
const (
	EnvMaximumStepLimit = "BFCL_MAXIMUM_STEP_LIMIT"
	EnvMaxTestCases     = "BFCL_MAX_TEST_CASES"
)

// Plan is one BFCL run: a category and everything the driver is told.
type Plan struct {
	Category string
	// Leaves are the categories BFCL runs for Category, in BFCL's order
	// (parse_test_category_argument sorts them).
	Leaves           []string
	NumThreads       int
	Temperature      float64
	MaximumStepLimit int
	// StepLimitFrom says where MaximumStepLimit came from: "recipe",
	// "default" or "env BFCL_MAXIMUM_STEP_LIMIT".
	StepLimitFrom string
	// MaxTestCases caps the run's test entries; 0 runs them all.
	MaxTestCases     int
	MaxTestCasesFrom string
	// Quotas, one per leaf in Leaves order, are set only when MaxTestCases
	// is: the run then generates the first Max entries of each leaf in
	// BFCL's sort order and evaluates partially.
	Quotas []Quota
	// Gates are the recipe's gates on this category and on its leaves.
	Gates []workloads.BFCLGate
}

// Quota is how many test entries of one leaf a subsampled run generates.
type Quota struct {
	Leaf string
	Max  int
}

// Name is the result name of the category: bfcl_<category>.
func (p Plan) Name() string { return ResultName(p.Category) }

// ResultName is the accuracy result name of a BFCL category.
func ResultName(category string) string { return workloads.BFCLResultName(category) }

// Subsampled reports whether the run covers only part of the category,
// which makes BFCL evaluate partially.
func (p Plan) Subsampled() bool { return p.Quotas != nil }

// IsGroup reports whether the category has sub-categories of its own.
func (p Plan) IsGroup() bool { return workloads.BFCLIsGroup(p.Category) }

// Plans plans every category of b in recipe order. getenv supplies the
// overrides (BFCL_MAXIMUM_STEP_LIMIT, BFCL_MAX_TEST_CASES); a bad value or
// a category BFCL does not know is an error.
func Plans(b *workloads.BFCL, getenv func(string) string) ([]Plan, error) {
	if b == nil {
		return nil, nil
	}
	steps, stepsFrom := DefaultMaximumStepLimit, "default"
	if b.MaximumStepLimit > 0 {
		steps, stepsFrom = b.MaximumStepLimit, "recipe"
	}
	if v, set, err := envInt(getenv, EnvMaximumStepLimit); err != nil {
		return nil, err
	} else if set {
		steps, stepsFrom = v, "env "+EnvMaximumStepLimit
	}
	envCases, envCasesSet, err := envInt(getenv, EnvMaxTestCases)
	if err != nil {
		return nil, err
	}
	threads := DefaultNumThreads
	if b.NumThreads > 0 {
		threads = b.NumThreads
	}
	temp := DefaultTemperature
	if b.Temperature != nil {
		temp = *b.Temperature
	}
	var plans []Plan
	for _, cat := range b.TestCategories {
		leaves, ok := workloads.BFCLLeaves(cat)
		if !ok {
			return nil, fmt.Errorf("bfcl: unknown test category %q (bfcl-eval %s)", cat, Version)
		}
		p := Plan{
			Category:         cat,
			Leaves:           leaves,
			NumThreads:       threads,
			Temperature:      temp,
			MaximumStepLimit: steps,
			StepLimitFrom:    stepsFrom,
		}
		if c, ok := b.MaxTestCases[cat]; ok {
			p.MaxTestCases, p.MaxTestCasesFrom = c, "recipe"
		}
		if envCasesSet {
			p.MaxTestCases, p.MaxTestCasesFrom = envCases, "env "+EnvMaxTestCases
		}
		if p.MaxTestCases > 0 {
			for _, leaf := range leaves {
				// Memory entries depend on prerequisite entries that sort
				// first, so "the first n" would be prerequisites only.
				if strings.HasPrefix(leaf, "memory_") {
					return nil, fmt.Errorf("bfcl %s: max_test_cases from %s: subsampling %s is not supported (its test entries depend on prerequisite entries)", cat, p.MaxTestCasesFrom, leaf)
				}
			}
			if p.Quotas, err = Split(p.MaxTestCases, leaves); err != nil {
				return nil, fmt.Errorf("bfcl %s: max_test_cases from %s: %w", cat, p.MaxTestCasesFrom, err)
			}
		}
		for _, g := range b.Gates {
			if g.Category == cat || (len(leaves) > 1 && slices.Contains(leaves, g.Category)) {
				p.Gates = append(p.Gates, g)
			}
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// Split divides n test entries evenly over leaves; the remainder goes one
// each to the first leaves in BFCL's order. Every leaf needs at least one,
// so that a group's overall score covers all of it.
func Split(n int, leaves []string) ([]Quota, error) {
	if len(leaves) == 0 {
		return nil, fmt.Errorf("no leaves to split %d test entries over", n)
	}
	if need := workloads.BFCLMinEntriesPerLeaf * len(leaves); n < need {
		// BFCL's evaluation fails on a sub-category of one entry, so
		// BFCL_MAX_TEST_CASES is held to what lint asks of the recipe.
		return nil, fmt.Errorf("%d test entries cannot give each of %d sub-categories (%s) the %d BFCL's evaluation needs: ask for at least %d", n, len(leaves), strings.Join(leaves, ", "), workloads.BFCLMinEntriesPerLeaf, need)
	}
	out := make([]Quota, len(leaves))
	for i, leaf := range leaves {
		out[i] = Quota{Leaf: leaf, Max: n / len(leaves)}
		if i < n%len(leaves) {
			out[i].Max++
		}
	}
	return out, nil
}

func envInt(getenv func(string) string, name string) (v int, set bool, err error) {
	s := strings.TrimSpace(getenv(name))
	if s == "" {
		return 0, false, nil
	}
	v, err = strconv.Atoi(s)
	if err != nil || v < 1 || v > 1_000_000 {
		return 0, false, fmt.Errorf("bfcl: %s=%q: want a whole number from 1 to 1000000", name, s)
	}
	return v, true, nil
}

// String is the plan as `runner plan` shows it, one line.
func (p Plan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: bfcl-eval %s, category %s", p.Name(), Version, p.Category)
	if len(p.Leaves) > 1 {
		fmt.Fprintf(&b, " (%s)", strings.Join(p.Leaves, ", "))
	}
	fmt.Fprintf(&b, ", %d threads, temperature %g, step limit %d (%s)", p.NumThreads, p.Temperature, p.MaximumStepLimit, p.StepLimitFrom)
	if p.Subsampled() {
		parts := make([]string, len(p.Quotas))
		for i, q := range p.Quotas {
			parts[i] = fmt.Sprintf("%s %d", q.Leaf, q.Max)
		}
		fmt.Fprintf(&b, ", first %d test entries (%s; %s), partial evaluation", p.MaxTestCases, p.MaxTestCasesFrom, strings.Join(parts, ", "))
	} else {
		b.WriteString(", every test entry")
	}
	for _, g := range p.Gates {
		fmt.Fprintf(&b, "; gate %s", DescribeGate(g))
	}
	return b.String()
}

// DescribeGate says what a gate demands, as a reviewer reads it.
func DescribeGate(g workloads.BFCLGate) string {
	return ResultName(g.Category) + " " + g.Expect.Describe()
}

// TorchLeaves are the leaves whose BFCL code imports sentence-transformers
// (and so torch), which the locked BFCL tool set leaves out.
var TorchLeaves = []string{"memory_vector"}

// NeedsTorch names the plan's leaves that need torch, none for most.
func (p Plan) NeedsTorch() []string {
	var out []string
	for _, l := range p.Leaves {
		if slices.Contains(TorchLeaves, l) {
			out = append(out, l)
		}
	}
	return out
}
