package job

import (
	"fmt"
	"io"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/workloads"
)

// Plan is every process Run would start, in order, without starting
// any: what a person checks in a PR. It is built from the same spec
// functions Run calls.
func (j *Job) Plan() []proc.Spec {
	res, c := j.res, j.cfg
	var specs []proc.Spec
	if c.BaseURL == "" {
		serve := serveSpecs(res, c, j.getenv, nil)
		if len(serve) == 2 {
			list, _ := staleContainerSpecs(res.Recipe.Name, nil)
			specs = append(specs, list)
		}
		specs = append(specs, serve...)
		if len(serve) == 2 {
			specs = append(specs, proc.Spec{Argv: []string{"docker", "inspect", "-f", "{{.State.Running}}", containerName(res, j.getenv)}})
		}
	}
	for _, run := range res.BenchRuns {
		for rep := 1; rep <= run.Repetitions; rep++ {
			specs = append(specs, benchSpec(res, j.baseURL, j.dir, run, rep, nil))
		}
	}
	if !c.BenchOnly && !res.Recipe.BenchOnly {
		for _, t := range res.Tasks {
			specs = append(specs, lmevalSpec(res, j.baseURL, j.dir, t, nil))
		}
	}
	if c.BaseURL == "" && res.Profile.Runtime == agents.Docker {
		for _, argv := range containerCleanup(containerName(res, j.getenv), c.Grace) {
			specs = append(specs, proc.Spec{Argv: argv})
		}
	}
	return append(specs, publishSpecs(j.dir, res.Recipe.Name, "success|error", nil, !coveredByStep(j.getenv, j.dir))...)
}

// WritePlan prints Plan for people.
func (j *Job) WritePlan(w io.Writer, cwd string) {
	writePlan(w, j.Plan(), serveEnv(j.res), cwd, j.environ)
}

// serveEnv is what the runner adds to the server's environment, for show.
func serveEnv(res *workloads.Resolved) []string {
	var env []string
	for _, e := range res.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	return env
}

// writePlan prints the processes in order. The server's own env is shown
// in full with secrets masked; the rest inherit the job environment, of
// which only the secret names are shown, masked.
func writePlan(w io.Writer, specs []proc.Spec, serverEnv []string, dir string, environ []string) {
	fmt.Fprintf(w, "working directory: %s\n", dir)
	var secrets []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if proc.IsSecretName(name) {
			secrets = append(secrets, name+"=***")
		}
	}
	fmt.Fprintf(w, "every process inherits the job environment")
	if len(secrets) > 0 {
		fmt.Fprintf(w, ", including %s", strings.Join(secrets, " "))
	}
	fmt.Fprintf(w, "\n\n")
	for i, s := range specs {
		fmt.Fprintf(w, "%d. %s\n", i+1, proc.FormatArgv(s.Argv))
		// Only the server gets the recipe's env; with --base-url there is
		// no server to start.
		if len(s.Argv) > 1 && s.Argv[0] == "vllm" && s.Argv[1] == "serve" {
			for _, e := range proc.MaskEnv(serverEnv) {
				fmt.Fprintf(w, "     env %s\n", e)
			}
		}
	}
}
