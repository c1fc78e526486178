package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/agents/podspec"
	"github.com/benchkite/benchkite/generator/internal/imagepin"
	"github.com/benchkite/benchkite/generator/internal/needs"
	"github.com/benchkite/benchkite/generator/internal/recipeimage"
	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/shell"
	"github.com/benchkite/benchkite/steps"
	"github.com/benchkite/benchkite/workloads"
)

// pipelineOptions are the inputs of assembly that are not recipes.
type pipelineOptions struct {
	getenv   func(string) string
	cpuQueue string
	// pins are the resolved images; nil runs tags as they are.
	pins *imagepin.Result
	// historyNeeds is the artifact the history step reads its needs from;
	// "" puts them into its environment.
	historyNeeds string
	// unpinned are recipes whose platform the build pins no image for:
	// skipped steps.
	unpinned []recipeimage.Unpinned
}

// runPipeline prints the pipeline JSON for this build. Output is written
// only once everything succeeded: a failed run prints nothing on stdout.
func runPipeline(ctx context.Context, pc pipelineConfig, io cliutil.Streams, getenv func(string) string) error {
	c := pc.common
	profiles, cat, err := c.load(io.Stderr)
	if err != nil {
		return err
	}
	env := selection.ReadBuildEnv(getenv)
	var changes *selection.Changes
	if strings.TrimSpace(env.Workloads) == "" && env.Source != "schedule" && env.IsPR() {
		changes = selection.PRChanges(ctx, selection.ExecGit(pc.repo), pc.repo, env.BaseBranch, c.agentsFile, profiles)
	}
	sel, err := selection.Select(cat, env, changes)
	if err != nil {
		return err
	}
	unpinned := recipeimage.SkipUnpinned(sel, profiles, getenv)
	pins := recipeimage.Resolve(ctx, &imagepin.Resolver{Skip: pc.noResolve}, sel, profiles, getenv)
	sel.Notes = append(sel.Notes, recipeimage.PinNotes(pins)...)
	sel.Notes = append(sel.Notes, recipeimage.SourceNotes(sel, profiles, getenv)...)
	if err := needs.CheckPath(pc.historyNeeds); err != nil {
		return err
	}
	p, err := assemble(sel, profiles, pipelineOptions{getenv: getenv, cpuQueue: cpuQueue(getenv), pins: pins, historyNeeds: pc.historyNeeds, unpinned: unpinned})
	if err != nil {
		return err
	}
	uploads, err := steps.MarshalUploads(p)
	if err != nil {
		return err
	}
	if pc.outDir == "" && len(uploads) > 1 {
		return fmt.Errorf("the pipeline needs %d uploads (at most %d jobs each): write it with --out-dir DIR and upload DIR/pipeline-*.json in order", len(uploads), steps.MaxJobsPerUpload)
	}
	notes := selection.Notes(sel, env)
	if pc.notes != "" {
		if err := os.WriteFile(pc.notes, []byte(notes), 0o644); err != nil {
			return fmt.Errorf("write notes: %w", err)
		}
	}
	for _, w := range cat.Warnings {
		fmt.Fprintln(io.Stderr, w.Error())
	}
	fmt.Fprint(io.Stderr, notes)
	if pc.historyNeeds != "" {
		if err := os.WriteFile(pc.historyNeeds, []byte(contract.EncodeNeeds(needs.Of(sel))), 0o644); err != nil {
			return fmt.Errorf("write the history step's needs: %w", err)
		}
	}
	if pc.outDir != "" {
		return steps.WriteUploads(pc.outDir, uploads)
	}
	_, err = io.Stdout.Write(uploads[0])
	return err
}

// cpuQueue is where non-GPU steps run: BENCHKITE_CPU_QUEUE, else the
// queue of the job that uploads the pipeline.
func cpuQueue(getenv func(string) string) string {
	if q := strings.TrimSpace(getenv("BENCHKITE_CPU_QUEUE")); q != "" {
		return q
	}
	return strings.TrimSpace(getenv("BUILDKITE_AGENT_META_DATA_QUEUE"))
}

func cpuAgents(q string) map[string]string {
	if q == "" {
		return nil
	}
	return map[string]string{"queue": q}
}

// assemble turns a selection into steps: one GPU step per recipe, one
// failing CPU step per invalid recipe, and a note when nothing runs.
func assemble(sel *selection.Selection, profiles *agents.Set, opt pipelineOptions) (steps.Pipeline, error) {
	var p steps.Pipeline
	if sel.Unknown != "" {
		p.Steps = append(p.Steps, unknownChangesStep(sel.Unknown, opt.cpuQueue))
	}
	if len(sel.Runs) > 0 {
		h, err := historyStep(sel, opt.cpuQueue, opt.historyNeeds)
		if err != nil {
			return p, err
		}
		p.Steps = append(p.Steps, h)
	}
	for _, run := range sel.Runs {
		s, err := recipeStep(run, sel, profiles, opt)
		if err != nil {
			return p, err
		}
		if err := steps.CheckStep(s); err != nil {
			// This recipe's text cannot be uploaded as it is: its own step
			// fails, the others still run.
			p.Steps = append(p.Steps, uncarriableStep(run.Recipe, s.Key, err, opt.cpuQueue))
			continue
		}
		p.Steps = append(p.Steps, s)
	}
	for _, u := range opt.unpinned {
		p.Steps = append(p.Steps, unpinnedStep(u, profiles, opt.cpuQueue))
	}
	for _, inv := range sel.Invalid {
		p.Steps = append(p.Steps, invalidStep(inv, opt.cpuQueue))
	}
	if len(sel.Runs) > 0 {
		p.Steps = append(p.Steps, reportStep(sel, opt.cpuQueue))
	}
	if len(p.Steps) == 0 {
		// An upload needs a step, and the build page should say why it is empty.
		p.Steps = append(p.Steps, steps.CommandStep{
			Label:    ":information_source: nothing to run",
			Key:      "nothing-to-run",
			Commands: []string{steps.PrintTextCommand("BENCHKITE_NOTES_TEXT")},
			Env:      map[string]string{"BENCHKITE_NOTES_TEXT": steps.TextValue(strings.Join(sel.Notes, "\n"))},
			Agents:   cpuAgents(opt.cpuQueue),
		})
	}
	return p, nil
}

func recipeStep(run selection.Selected, sel *selection.Selection, profiles *agents.Set, opt pipelineOptions) (steps.CommandStep, error) {
	r := run.Recipe
	res, err := workloads.Resolve(r, profiles, opt.getenv)
	if errors.Is(err, workloads.ErrBuildOverride) {
		return imageFailedStep(r.Name, err, opt.cpuQueue), nil
	}
	if err != nil {
		return steps.CommandStep{}, err
	}
	pin := recipeimage.For(opt.pins, res)
	if pin.Err != nil {
		return imageFailedStep(r.Name, pin.Err, opt.cpuQueue), nil
	}
	env := map[string]string{"VLLM_IMAGE": pin.Image}
	if pinVar := workloads.PlatformImageEnv(res.Profile.Platform()); res.Image.Source == pinVar {
		// The job gets the build's pin too; the pinned digest, not the
		// tag, must win there as well.
		env[pinVar] = pin.Image
	}
	if r.VLLM.Build != nil {
		// The job builds the image; no registry knows it.
		delete(env, "VLLM_IMAGE")
	}
	if pin.Commit != "" {
		env["VLLM_COMMIT"] = pin.Commit
	}
	if sel.BenchOff || r.BenchOnly {
		env["BENCH_ONLY"] = "1"
	}
	if sel.Nightly {
		env["NIGHTLY"] = "1"
	}
	label := strings.TrimSpace(res.Profile.Emoji + " " + r.Name)
	if run.SoftFail {
		label += " (blocked: soft fail)"
	}
	s := steps.CommandStep{
		Label: label,
		Key:   contract.StepKey(r.Name),
		Commands: []string{
			shell.Join([]string{"buildkite-agent", "artifact", "download", contract.RunnerArtifact, ".", "--step", contract.BootstrapStepKey}),
			shell.Join([]string{"chmod", "+x", contract.RunnerArtifact}),
			shell.Join([]string{contract.RunnerArtifact, "run", "--history-step", contract.HistoryStepKey, r.Path}),
		},
		Agents:           res.Profile.AgentTags(res.Queue),
		Env:              env,
		TimeoutInMinutes: r.StepTimeout(),
		// Retry a job whose agent vanished (a preempted or restarted GPU
		// node), never one whose benchmark failed: that is the result.
		Retry:         &steps.Retry{Automatic: []steps.AutomaticRetry{{ExitStatus: steps.ExitStatuses{Codes: []int{-1}}, Limit: 2}}},
		ArtifactPaths: []string{contract.ArtifactGlob(contract.ResultsDir(r.Name))},
	}
	// An unverified run (no baseline, speculation unreported) soft-fails:
	// not red, never green; so does a run that failed only on regression
	// gates, which the report step judges within the build's budget.
	s.SoftFail = steps.ExitStatuses{Codes: slices.Clone(contract.SoftFailStatuses)}
	if run.SoftFail {
		s.SoftFail = steps.ExitStatuses{Any: true}
	}
	if res.Profile.Runtime == agents.Native {
		plugin, err := podSpec(res, pin.Pull, opt.getenv)
		if err != nil {
			return s, fmt.Errorf("recipe %s: %w", r.Name, err)
		}
		s.Plugins = []steps.Plugin{plugin}
	}
	return s, nil
}

// reportStep gathers every recipe's results into one build annotation once
// all recipe steps ended, passed or not. It fails only for regressions.
func reportStep(sel *selection.Selection, queue string) steps.CommandStep {
	var deps []steps.Dependency
	var selected []string
	for _, run := range sel.Runs {
		deps = append(deps, steps.Dependency{Step: contract.StepKey(run.Recipe.Name), AllowFailure: true})
		selected = append(selected, run.Recipe.Name)
	}
	var skipped []contract.Skipped
	for _, s := range sel.Skipped {
		skipped = append(skipped, contract.Skipped{Name: s.Name, Reason: s.Reason})
	}
	for _, inv := range sel.Invalid {
		skipped = append(skipped, contract.Skipped{Name: inv.Path, Reason: "invalid recipe"})
	}
	s := steps.CommandStep{
		Label: ":bar_chart: report",
		Key:   contract.ReportStepKey,
		Commands: []string{
			shell.Join([]string{"buildkite-agent", "artifact", "download", contract.RunnerArtifact, ".", "--step", contract.BootstrapStepKey}),
			shell.Join([]string{"chmod", "+x", contract.RunnerArtifact}),
			shell.Join([]string{contract.RunnerArtifact, "report"}),
		},
		DependsOn:              deps,
		AllowDependencyFailure: true,
		Agents:                 cpuAgents(queue),
	}
	s.Env = map[string]string{contract.SelectedEnv: contract.EncodeSelected(selected)}
	if len(skipped) > 0 {
		s.Env[contract.SkippedEnv] = contract.CapSkipped(contract.EncodeSkipped(skipped))
	}
	return s
}

// podSpec is the agent-stack-k8s plugin that runs the job inside the vLLM
// image, in the pod the profile's cluster needs (see agents/podspec): its
// GPUs, shared memory for NCCL/RCCL, the HF cache and the HF token from a
// k8s secret (never from the pipeline).
func podSpec(res *workloads.Resolved, image string, getenv func(string) string) (steps.Plugin, error) {
	spec, err := podspec.Build(res.Profile, podspec.Job{Image: image, NumGPUs: res.Recipe.NumGPUs}, getenv)
	if err != nil {
		return steps.Plugin{}, err
	}
	return steps.Plugin{Name: "kubernetes", Config: spec.Plugin()}, nil
}

// unknownChangesStep fails a PR build whose changes git could not tell:
// it runs no recipe, and says what git answered and how to choose recipes.
func unknownChangesStep(why, queue string) steps.CommandStep {
	return failingStep(":warning: PR changes unknown", "pr-changes-unknown", "could not tell what this PR changed", why, queue)
}

// invalidStep fails on the CPU queue with the recipe's problems.
func invalidStep(inv selection.InvalidRecipe, queue string) steps.CommandStep {
	return failingStep(":warning: invalid recipe "+inv.Path, steps.Key("invalid", inv.Path), "invalid recipe", inv.Problems.Error(), queue)
}
