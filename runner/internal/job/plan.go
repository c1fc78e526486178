package job

import (
	"fmt"
	"io"

	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
)

// plan is every process Run would start, in order, without starting
// any: what a person checks in a PR. It walks the script Run walks
// (script.go), each phase listed from the spec functions it runs.
//
// Some processes get a note, where the argv does not say everything: the
// settings a BFCL run reads from its config file.
func (j *Job) plan() ([]proc.Spec, map[int]string, error) {
	p := &planList{notes: map[int]string{}}
	for _, s := range script {
		if s.plan == nil {
			continue
		}
		if err := s.plan(j, p); err != nil {
			return nil, nil, err
		}
	}
	return p.specs, p.notes, nil
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
