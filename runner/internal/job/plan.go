package job

import (
	"fmt"
	"io"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/job/benchdriver"
	"github.com/benchkite/benchkite/runner/internal/proc"
)

// plan is every process Run would start, in order, without starting
// any: what a person checks in a PR. It is built from the same spec
// functions Run calls.
//
// Some processes get a note, where the argv does not say everything: the
// settings a BFCL run reads from its config file.
func (j *Job) plan() ([]proc.Spec, map[int]string, error) {
	res, c := j.res, j.cfg
	var specs []proc.Spec
	notes := map[int]string{}
	add := func(s proc.Spec, err error) error {
		specs = append(specs, s)
		return err
	}
	if j.runsAccuracy() {
		install, err := j.toolsPlan()
		if err != nil {
			return nil, nil, err
		}
		specs = append(specs, install...)
	}
	if j.builds() {
		if err := add(j.buildSpec()); err != nil {
			return nil, nil, err
		}
	}
	if c.BaseURL == "" {
		serve, err := j.serveSpecs()
		if err != nil {
			return nil, nil, err
		}
		docker, err := j.env(childenv.Docker)
		if err != nil {
			return nil, nil, err
		}
		ps, err := j.pytestSpecs()
		if err != nil {
			return nil, nil, err
		}
		pytest := func() {
			specs = append(specs, ps.probe, ps.install)
			notes[len(specs)-1] = "only when the line above finds no importable pytest; the distributions of its lock that Python lacks arrive on stdin"
		}
		if len(serve) == 2 {
			list, _, _ := staleContainerSpecs(docker)
			specs = append(specs, list)
			specs = append(specs, serve...)
			pytest()
			specs = append(specs, *ps.release)
		} else {
			pytest()
			specs = append(specs, serve...)
		}
	}
	// Whether the container still runs is asked once it is ready, and
	// again before each accuracy phase.
	alive := func() error {
		if c.BaseURL != "" || res.Profile.Runtime != agents.Docker {
			return nil
		}
		return add(j.inspectSpec())
	}
	if err := alive(); err != nil {
		return nil, nil, err
	}
	driver := len(res.BenchRuns) > 0 && !j.benchDriverOff()
	if driver {
		if err := add(j.benchDriverSpec()); err != nil {
			return nil, nil, err
		}
		notes[len(specs)-1] = "the bench driver: the bench runs below, one argv (as JSON) a line on its stdin, through vLLM's bench entry point in this one process"
	}
	for i, run := range res.BenchRuns {
		for rep := 1; rep <= run.Repetitions; rep++ {
			if err := add(j.benchSpec(run, rep)); err != nil {
				return nil, nil, err
			}
			if driver && i == 0 && rep == 1 {
				notes[len(specs)-1] = fmt.Sprintf("this and the bench runs after it go to the bench driver above; each starts as its own process only where the driver exits %d (no vllm.benchmarks.serve in that Python)", benchdriver.ExitNoEntryPoint)
			}
		}
	}
	if err := j.planAIPerf(add); err != nil {
		return nil, nil, err
	}
	if j.runsAccuracy() && len(res.Tasks) > 0 {
		if err := alive(); err != nil {
			return nil, nil, err
		}
		for _, t := range j.taskEntries() {
			if err := add(j.lmevalSpec(t.ResolvedTask, t.Dir)); err != nil {
				return nil, nil, err
			}
		}
	}
	if j.runsAccuracy() {
		plans, err := j.bfclPlans()
		if err != nil {
			return nil, nil, err
		}
		if len(plans) > 0 {
			if err := alive(); err != nil {
				return nil, nil, err
			}
		}
		for _, p := range plans {
			if err := add(j.bfclSpec(p)); err != nil {
				return nil, nil, err
			}
			notes[len(specs)-1] = p.String()
		}
	}
	if c.BaseURL == "" && res.Profile.Runtime == agents.Docker {
		env, err := j.env(childenv.Docker)
		if err != nil {
			return nil, nil, err
		}
		for _, argv := range containerCleanup(containerName(res, j.getenv), c.Grace) {
			specs = append(specs, proc.Spec{Argv: argv, Env: env})
		}
	}
	specs = append(specs, j.provenanceSpecs()...)
	publish, err := j.publishSpecs("success|warning|error", !coveredByStep(j.getenv, j.dir))
	if err != nil {
		return nil, nil, err
	}
	return append(specs, publish...), notes, nil
}

// WritePlan prints Plan for people: each process with its whole
// environment, secrets masked.
func (j *Job) WritePlan(w io.Writer, cwd string) error {
	specs, notes, err := j.plan()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "working directory: %s\n", cwd)
	fmt.Fprintf(w, "every process gets only the environment listed under it\n\n")
	for i, s := range specs {
		fmt.Fprintf(w, "%d. %s\n", i+1, proc.FormatArgv(s.Argv))
		if n, ok := notes[i]; ok {
			fmt.Fprintf(w, "     # %s\n", n)
		}
		for _, e := range childenv.Render(s.Env) {
			fmt.Fprintf(w, "     env %s\n", e)
		}
	}
	return nil
}
