package steps

import (
	"errors"
	"fmt"
)

// Split cuts p into the uploads a build needs when it holds more jobs or
// steps than one "pipeline upload" accepts. The steps keep their order, so
// a step that depends on steps before it (the build report on every recipe
// step) lands in the same upload or a later one: Buildkite resolves a
// depends_on against every step the build already has. Each upload carries
// p.Env. A pipeline that fits is returned as it is, in one piece.
//
// p is validated whole first (keys unique across the uploads, no unknown
// dependency, no cycle); a step that depends on a step of a later upload,
// or one step with more jobs than an upload accepts, is an error.
func Split(p Pipeline) ([]Pipeline, error) {
	whole := validator{keys: map[string]string{}}
	for i, s := range p.Steps {
		whole.step(fmt.Sprintf("steps[%d]", i), s, false)
	}
	whole.dependencies()
	if err := errors.Join(whole.errs...); err != nil {
		return nil, fmt.Errorf("splitting pipeline: %w", err)
	}

	var parts []Pipeline
	cur, jobs := Pipeline{Env: p.Env}, 0
	for i, s := range p.Steps {
		n := jobCount(s)
		if n > MaxJobsPerUpload {
			return nil, fmt.Errorf("splitting pipeline: steps[%d]: %w: %d jobs in one step, at most %d", i, ErrTooManyJobs, n, MaxJobsPerUpload)
		}
		if len(cur.Steps) > 0 && (jobs+n > MaxJobsPerUpload || len(cur.Steps) == MaxStepsPerUpload) {
			parts = append(parts, cur)
			cur, jobs = Pipeline{Env: p.Env}, 0
		}
		cur.Steps = append(cur.Steps, s)
		jobs += n
	}
	parts = append(parts, cur)

	earlier := map[string]bool{}
	for i, part := range parts {
		if err := part.validateAfter(earlier); err != nil {
			if errors.Is(err, ErrUnknownDependency) {
				err = fmt.Errorf("%w: %w", ErrLaterDependency, err)
			}
			return nil, fmt.Errorf("splitting pipeline: upload %d of %d: %w", i+1, len(parts), err)
		}
		for _, k := range keysOf(part) {
			earlier[k] = true
		}
	}
	return parts, nil
}

// jobCount is how many jobs s creates, as Validate counts them.
func jobCount(s Step) int {
	v := validator{keys: map[string]string{}}
	v.step("", s, false)
	return v.jobs
}

// keysOf lists the step keys p defines, groups' inner steps included.
func keysOf(p Pipeline) []string {
	v := validator{keys: map[string]string{}}
	for _, s := range p.Steps {
		v.step("", s, false)
	}
	keys := make([]string, 0, len(v.keys))
	for k := range v.keys {
		keys = append(keys, k)
	}
	return keys
}
