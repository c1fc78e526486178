package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/workloads"
)

// containerName is unique per job so that concurrent jobs on one host and
// leftovers of a killed job never collide.
func containerName(res *workloads.Resolved, getenv func(string) string) string {
	id := getenv("BUILDKITE_JOB_ID")
	if id == "" {
		id = strconv.Itoa(os.Getpid())
	}
	return "benchkite-" + res.Recipe.Name + "-" + id
}

// Container labels: every server container carries them, so that the
// next job on the host can find what a killed one left, and tell a
// leftover from a container a live job still uses.
const (
	LabelJob    = "benchkite.job"
	LabelRecipe = "benchkite.recipe"
	// LabelRunner is the runner's proc.Identity: whether its job still
	// runs is a look at the host's process table.
	LabelRunner = "benchkite.runner"
)

// planIdentity stands for the runner's identity in a plan, which no
// runner process of its own runs.
const planIdentity = "<pid-namespace>/<pid>/<start-time>"

func containerLabels(res *workloads.Resolved, getenv func(string) string, identity string) []string {
	id := getenv("BUILDKITE_JOB_ID")
	if id == "" {
		id = "pid-" + strconv.Itoa(os.Getpid())
	}
	labels := []string{LabelJob + "=" + id, LabelRecipe + "=" + res.Recipe.Name}
	if identity != "" {
		labels = append(labels, LabelRunner+"="+identity)
	}
	return labels
}

// staleContainerSpecs list every benchkite server container on this host
// (of any recipe: a leftover of another recipe holds the GPUs just the
// same), describe them, and remove some.
func staleContainerSpecs(environ []string) (list proc.Spec, inspect func(ids []string) proc.Spec, remove func(ids []string) proc.Spec) {
	list = proc.Spec{Argv: []string{"docker", "ps", "-aq", "--no-trunc", "--filter", "label=" + LabelJob}, Env: environ}
	inspect = func(ids []string) proc.Spec {
		format := `{{.Id}}|{{.Name}}|{{.State.Running}}|{{index .Config.Labels "` + LabelJob + `"}}|{{index .Config.Labels "` + LabelRecipe + `"}}|{{index .Config.Labels "` + LabelRunner + `"}}`
		return proc.Spec{Argv: append([]string{"docker", "inspect", "-f", format}, ids...), Env: environ}
	}
	remove = func(ids []string) proc.Spec {
		return proc.Spec{Argv: append([]string{"docker", "rm", "-f"}, ids...), Env: environ}
	}
	return list, inspect, remove
}

// leftover is one container found by the sweep.
type leftover struct {
	id, name, job, recipe, runner string
	running                       bool
}

// staleReason says why a container is a leftover to remove, or "" when a
// live job (or one this runner cannot see) may still use it.
func staleReason(c leftover, ourJob string) string {
	switch {
	case !c.running:
		return "not running"
	case ourJob != "" && c.job == ourJob:
		return "left by an earlier run of this job"
	case c.runner == "":
		return "" // no runner identity: its job cannot be checked
	}
	if alive, known := proc.IdentityAlive(c.runner); known && !alive {
		return "its job's runner has ended"
	}
	return ""
}

// removeStaleContainers removes the benchkite containers on the host that
// no live job uses, naming each; a running one of a live job is left
// alone. Failures only warn: the port check that follows names what
// still holds the port.
func (j *Job) removeStaleContainers(ctx context.Context) {
	env, err := j.env(childenv.Docker)
	if err != nil {
		fmt.Fprintf(j.log, "runner: warning: list stale containers: %v\n", err)
		return
	}
	list, inspect, remove := staleContainerSpecs(env)
	var out strings.Builder
	list.Stdout, list.Stderr = &out, io.Discard
	if err := j.procs.Run(ctx, list); err != nil {
		fmt.Fprintf(j.log, "runner: warning: list stale containers: %v\n", err)
		return
	}
	ids := strings.Fields(out.String())
	if len(ids) == 0 {
		return
	}
	out.Reset()
	desc := inspect(ids)
	desc.Stdout, desc.Stderr = &out, io.Discard
	// A container gone between ps and inspect makes inspect fail for it
	// alone; the others are still printed.
	_ = j.procs.Run(ctx, desc)
	var stale []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 6 {
			continue
		}
		for i := range f {
			if f[i] == "<no value>" {
				f[i] = ""
			}
		}
		c := leftover{id: f[0], name: strings.TrimPrefix(f[1], "/"), running: f[2] == "true", job: f[3], recipe: f[4], runner: f[5]}
		why := staleReason(c, j.getenv("BUILDKITE_JOB_ID"))
		if why == "" {
			fmt.Fprintf(j.log, "runner: container %s (recipe %s, job %s) is running for a job that may be live; left alone\n", c.name, orText(c.recipe, nil), orText(c.job, nil))
			continue
		}
		fmt.Fprintf(j.log, "runner: removing container %s (recipe %s, job %s): %s\n", c.name, orText(c.recipe, nil), orText(c.job, nil), why)
		stale = append(stale, c.id)
	}
	if len(stale) == 0 {
		return
	}
	rm := remove(stale)
	rm.Stdout, rm.Stderr = io.Discard, j.log
	if err := j.procs.Run(ctx, rm); err != nil {
		fmt.Fprintf(j.log, "runner: warning: remove stale containers: %v\n", err)
	}
}

// containerCleanup stops the container, giving the server the grace
// period, and removes it.
func containerCleanup(name string, grace time.Duration) [][]string {
	secs := strconv.Itoa(int(grace.Round(time.Second) / time.Second))
	return [][]string{{"docker", "stop", "-t", secs, name}, {"docker", "rm", "-f", name}}
}

// inspectSpec asks docker whether the server's container still runs.
func (j *Job) inspectSpec() (proc.Spec, error) {
	env, err := j.env(childenv.Docker)
	return proc.Spec{Argv: []string{"docker", "inspect", "-f", "{{.State.Running}}", containerName(j.res, j.getenv)}, Env: env}, err
}
