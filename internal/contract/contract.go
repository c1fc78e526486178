// Package contract is the handoff between the generator, which writes the
// pipeline, and the runner, which runs inside its steps: step keys, where a
// recipe's results live and how they are uploaded, where the runner binary
// is found, and how recipes left out of a build reach the report step.
// Both sides use these and nothing else, so they cannot drift apart.
package contract

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

const (
	// BootstrapStepKey is the step that builds the runner and uploads it.
	BootstrapStepKey = "bootstrap"
	// ReportStepKey is the build-wide report step.
	ReportStepKey = "report"
	// RunnerArtifact is the runner binary's artifact path, relative to the
	// job's working directory.
	RunnerArtifact = "bin/runner"
	// ResultsRoot holds one directory per recipe.
	ResultsRoot = "results"
	// SkippedEnv carries the recipes a build left out to the report step.
	SkippedEnv = "BENCHKITE_SKIPPED"
	// SelectedEnv carries the recipes a build runs to the report step, one
	// name a line: a recipe whose job left no summary is still reported.
	SelectedEnv = "BENCHKITE_SELECTED"
	// MaxEnvValue bounds what one step env var may carry. The agent
	// refuses to start a job whose environment is too large (an env var
	// over 128 KiB keeps the step from starting); this leaves room for
	// the rest.
	MaxEnvValue = 32 << 10
)

// EncodeSelected writes recipe names one a line for SelectedEnv. Names
// that would take it past MaxEnvValue are left out, and a last line
// "+N" says how many: the report step then learns them from the build's
// jobs.
func EncodeSelected(names []string) string {
	var b strings.Builder
	for i, n := range names {
		more := "\n+" + strconv.Itoa(len(names)-i)
		if b.Len()+len(n)+1+len(more) > MaxEnvValue {
			return b.String() + more
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(n)
	}
	return b.String()
}

// CapSkipped keeps an EncodeSkipped value within MaxEnvValue: whole
// lines are dropped from the end, and a last record says how many.
func CapSkipped(v string) string {
	if len(v) <= MaxEnvValue {
		return v
	}
	lines := strings.Split(v, "\n")
	for n := len(lines) - 1; n >= 0; n-- {
		note := fmt.Sprintf("…\tand %d more, cut to fit the step's environment", len(lines)-n)
		kept := strings.Join(lines[:n], "\n")
		if len(kept)+1+len(note) <= MaxEnvValue {
			if kept == "" {
				return note
			}
			return kept + "\n" + note
		}
	}
	return ""
}

// ParseSelected reads what EncodeSelected wrote: the names, and how many
// were left out.
func ParseSelected(s string) (names []string, left int) {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if n, ok := strings.CutPrefix(line, "+"); ok {
			left, _ = strconv.Atoi(n)
			continue
		}
		if line != "" {
			names = append(names, line)
		}
	}
	return names, left
}

// ExitUnverified is the runner's exit status for an unverified run:
// everything measured passed, but a check could not be made (a gate had no
// baseline, speculation reported no acceptance). The recipe's step lists it
// under soft_fail, so Buildkite shows the job soft-failed, never green. 75
// is EX_TEMPFAIL of sysexits.h ("try again later": a baseline may exist
// tomorrow); it is none of the runner's other statuses (0 pass, 1 fail or
// error, 2 usage, 128+N a signal) and no shell or agent status (126, 127,
// -1).
const ExitUnverified = 75

// ExitRegressed is the runner's exit status for a run whose only failed
// gates are regression gates. Its step cannot see the rest of the night,
// so it cannot tell whether the build's false-alarm budget keeps the
// regression: the step soft-fails it, and the report step, which sees
// every recipe, fails the build for a kept one. 79 is outside sysexits.h's
// range and none of the runner's other statuses.
const ExitRegressed = 79

// SoftFailStatuses are the exit statuses a recipe's step soft-fails.
var SoftFailStatuses = []int{ExitUnverified, ExitRegressed}

// NightPassed says whether a recipe's past job counts as a night that
// passed, for gates that compare with one (baseline_from): it passed, or
// it soft-failed as unverified (everything measured passed) or as
// regressed (slower, not wrong: its answers and measurements stand; the
// regression detector keeps its own record of flagged nights).
func NightPassed(state string, softFailed bool, exitStatus *int) bool {
	if state == "passed" {
		return true
	}
	return softFailed && exitStatus != nil && slices.Contains(SoftFailStatuses, *exitStatus)
}

// StepKey is the Buildkite step key of a recipe's GPU job. The generator
// sets it and baselines find a recipe's past results by it. Recipe names
// only hold characters step keys allow, so no escaping is needed.
func StepKey(recipe string) string { return "recipe:" + recipe }

// ResultsDir is a recipe's results directory, relative to the job's
// working directory.
func ResultsDir(recipe string) string { return ResultsRoot + "/" + recipe }

// SummaryPath is the artifact path of a recipe's summary.json, exactly as
// uploaded.
func SummaryPath(recipe string) string { return ResultsDir(recipe) + "/summary.json" }

// ArtifactGlob is what a recipe's job uploads: everything under dir.
func ArtifactGlob(dir string) string { return path.Clean(strings.ReplaceAll(dir, `\`, "/")) + "/**/*" }

// Skipped is a recipe the generator left out of a build, and why.
type Skipped struct {
	Name   string
	Reason string
}

// EncodeSkipped writes skipped recipes as "name<TAB>reason" lines, the
// value of SkippedEnv. Tabs and newlines inside a field become spaces so
// that every record stays one line of two fields. Backslashes are doubled:
// the value passes through the agent's upload interpolation, which drops
// the backslash of `\$`, and no odd run of them is left before a "$".
func EncodeSkipped(list []Skipped) string {
	flat := strings.NewReplacer("\t", " ", "\r", " ", "\n", " ", `\`, `\\`)
	lines := make([]string, 0, len(list))
	for _, s := range list {
		lines = append(lines, flat.Replace(s.Name)+"\t"+flat.Replace(s.Reason))
	}
	return strings.Join(lines, "\n")
}

var unescapeSkipped = strings.NewReplacer(`\\`, `\`)

// ParseSkipped reads what EncodeSkipped wrote; blank lines are ignored.
func ParseSkipped(s string) []Skipped {
	var out []Skipped
	for _, line := range strings.Split(s, "\n") {
		name, reason, _ := strings.Cut(line, "\t")
		if name = strings.TrimSpace(name); name != "" {
			out = append(out, Skipped{unescapeSkipped.Replace(name), unescapeSkipped.Replace(strings.TrimSpace(reason))})
		}
	}
	return out
}

const (
	// HistoryStepKey is the CPU step that fetches, once per build, the past
	// nights every recipe of the build compares with.
	HistoryStepKey = "history"
	// HistoryDir holds what that step uploads: one file per recipe
	// (HistoryFile), which a GPU job downloads for the recipes it
	// compares with, and HistoryArtifact, all of them, which the next
	// build's history step starts from. Relative to the job's working
	// directory.
	HistoryDir = ResultsRoot + "/_history"
	// HistoryArtifact is every recipe's nights in one file.
	HistoryArtifact = HistoryDir + "/baselines.json"
	// HistoryEnv carries the nights the history step must fetch, as
	// EncodeNeeds writes them.
	HistoryEnv = "BENCHKITE_HISTORY"
	// TrendNights is how many past nights a recipe's trend picture shows;
	// the history step fetches at least that many of every selected recipe.
	TrendNights = 10
)

// Need is a recipe whose past nights a build compares with, and how many.
type Need struct {
	Recipe string
	Nights int
	// Samples are the lm_eval tasks whose per-question outcomes the history
	// step also keeps, from the samples the recipe's job logged: the tasks
	// of the baseline_from gates that name the recipe.
	Samples []string
}

// samplesPrefix starts a need's third field.
const samplesPrefix = "samples="

// HistoryFile is the history step's file of one recipe's nights.
func HistoryFile(recipe string) string {
	return HistoryDir + "/recipes/" + recipe + ".json"
}

// EncodeNeeds writes needs as "recipe<TAB>nights" lines, the value of
// HistoryEnv, with a third field "samples=task,task" when the need has
// Samples. Recipe and task names hold no tabs, newlines or commas.
func EncodeNeeds(needs []Need) string {
	lines := make([]string, 0, len(needs))
	for _, n := range needs {
		line := n.Recipe + "\t" + strconv.Itoa(n.Nights)
		if len(n.Samples) > 0 {
			line += "\t" + samplesPrefix + strings.Join(n.Samples, ",")
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// ParseNeeds reads what EncodeNeeds wrote; blank lines are ignored.
func ParseNeeds(s string) ([]Need, error) {
	var out []Need
	for i, line := range strings.Split(s, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		bad := fmt.Errorf("%s line %d: want \"recipe<TAB>nights\" with nights >= 1, then optionally <TAB>samples=task,task; got %q", HistoryEnv, i+1, line)
		fields := strings.Split(line, "\t")
		if len(fields) < 2 || len(fields) > 3 {
			return nil, bad
		}
		name := strings.TrimSpace(fields[0])
		n, err := strconv.Atoi(strings.TrimSpace(fields[1]))
		if err != nil || n < 1 || name == "" {
			return nil, bad
		}
		need := Need{Recipe: name, Nights: n}
		if len(fields) == 3 {
			tasks, ok := strings.CutPrefix(strings.TrimSpace(fields[2]), samplesPrefix)
			if !ok || tasks == "" {
				return nil, bad
			}
			for _, t := range strings.Split(tasks, ",") {
				if t = strings.TrimSpace(t); t == "" {
					return nil, bad
				}
				need.Samples = append(need.Samples, t)
			}
		}
		out = append(out, need)
	}
	return out, nil
}

// TaskDirs names the output folder of each lm_eval task entry, in order,
// relative to the recipe's results directory: the task's name, or for a
// name listed again "<name>.<k>" (k counting from 2), never one already
// taken. Each entry is judged on its own folder's files: two entries of
// one task must not read each other's results.
func TaskDirs(names []string) []string {
	taken := map[string]bool{}
	for _, n := range names {
		taken[n] = true
	}
	out := make([]string, len(names))
	used := map[string]bool{}
	for i, n := range names {
		dir := n
		for k := 2; used[dir]; k++ {
			dir = n + "." + strconv.Itoa(k)
			if taken[dir] {
				dir = n // a task of that name exists; try the next k
			}
		}
		used[dir] = true
		out[i] = dir
	}
	return out
}
