package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/annotate"
	"github.com/benchkite/benchkite/runner/internal/gputime"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// writeGPUTime is the build's GPU time: the total, each phase's share
// with the largest named, what red nights lost and a skipped sweep saved,
// and the cost where the profiles give a price.
func writeGPUTime(b *strings.Builder, sums []summary.Summary) {
	t := gputime.Sum(sums)
	if (t.Runs == 0 || t.Total <= 0) && t.Tries() == 0 {
		return
	}
	gpuh := func(s float64) string { u, per := gpuUnit(s); return fmt.Sprintf("%.1f %s", s/per, u) }
	// The phases' shares are of the runs' own time, retried tries apart.
	runs := t.Total - t.Retried
	if t.Tries() > 0 {
		fmt.Fprintf(b, "**GPU time:** %s in all, %s over %d run(s)", gpuh(t.Total), gpuh(runs), t.Runs)
	} else {
		fmt.Fprintf(b, "**GPU time:** %s over %d run(s)", gpuh(t.Total), t.Runs)
	}
	if d := t.Dominant(); d != "" && runs > 0 {
		fmt.Fprintf(b, "; most in **%s** (%.0f%%)", d, t.Phases[d]/runs*100)
	}
	if t.Lost > 0 {
		fmt.Fprintf(b, "; %s lost to runs that could not be judged", gpuh(t.Lost))
	}
	if n := t.Tries(); n > 0 {
		fmt.Fprintf(b, "; %s held by %d retried tr%s (%s)", gpuh(t.Retried), n, map[bool]string{true: "y", false: "ies"}[n == 1], retriedClasses(t.RetriedTries))
	}
	if t.Saved > 0 {
		fmt.Fprintf(b, "; about %s saved by stopping sweeps after a failed first point", gpuh(t.Saved))
	}
	if t.Priced > 0 {
		fmt.Fprintf(b, "; cost %.2f", t.Cost)
		if t.Priced < t.Runs {
			fmt.Fprintf(b, " (%d of %d runs priced)", t.Priced, t.Runs)
		}
	}
	b.WriteString(".\n\n| phase |")
	for _, p := range gputime.Phases {
		fmt.Fprintf(b, " %s |", p)
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("--:|", len(gputime.Phases)))
	unit, per := gpuUnit(runs)
	fmt.Fprintf(b, "\n| %s |", unit)
	for _, p := range gputime.Phases {
		fmt.Fprintf(b, " %.1f |", t.Phases[p]/per)
	}
	b.WriteString("\n\n")
}

// gpuUnit is the unit GPU-seconds s read best in, with its size: hours
// from a tenth of one, then minutes, then seconds (a drill's runs), so
// that no amount shows as 0.0.
func gpuUnit(s float64) (string, float64) {
	switch {
	case s >= 360:
		return "GPU-h", 3600
	case s >= 60:
		return "GPU-min", 60
	}
	return "GPU-s", 1
}

// retriedClasses names the retried tries' classes by name; a try
// someone canceled has no class.
func retriedClasses(c map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		name := k
		if k == "" {
			name = "canceled"
		}
		parts = append(parts, fmt.Sprintf("%s %d", annotate.Text(name), c[k]))
	}
	return strings.Join(parts, " · ")
}
