package steps_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/steps"
)

// build is n command steps of one job each, then a report step that
// depends on all of them, as the generator assembles a big night.
func build(n int) steps.Pipeline {
	p := steps.Pipeline{Env: map[string]string{"A": "1"}}
	var deps []steps.Dependency
	for i := range n {
		key := fmt.Sprintf("r%d", i)
		p.Steps = append(p.Steps, steps.CommandStep{Key: key, Commands: []string{"true"}})
		deps = append(deps, steps.Dependency{Step: key, AllowFailure: true})
	}
	p.Steps = append(p.Steps, steps.CommandStep{Key: "report", Commands: []string{"true"}, DependsOn: deps})
	return p
}

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		p     steps.Pipeline
		sizes []int
	}{
		{"fits in one", build(10), []int{11}},
		{"exactly the limit", build(499), []int{500}},
		{"one past the limit", build(500), []int{500, 1}},
		{"2000 recipes", build(2000), []int{500, 500, 500, 500, 1}},
		{"parallel steps count as their jobs", steps.Pipeline{Steps: []steps.Step{
			steps.CommandStep{Key: "a", Commands: []string{"true"}, Parallelism: 300},
			steps.CommandStep{Key: "b", Commands: []string{"true"}, Parallelism: 300},
			steps.CommandStep{Key: "c", Commands: []string{"true"}, DependsOn: []steps.Dependency{{Step: "a"}, {Step: "b"}}},
		}}, []int{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parts, err := steps.Split(tt.p)
			if err != nil {
				t.Fatalf("Split() error = %v", err)
			}
			var sizes []int
			var all []steps.Step
			for i, part := range parts {
				sizes = append(sizes, len(part.Steps))
				if diff := cmp.Diff(tt.p.Env, part.Env); diff != "" {
					t.Errorf("upload %d env (-whole +part):\n%s", i, diff)
				}
				all = append(all, part.Steps...)
			}
			if diff := cmp.Diff(tt.sizes, sizes); diff != "" {
				t.Errorf("steps per upload (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(len(tt.p.Steps), len(all)); diff != "" {
				t.Errorf("steps lost or added (-want +got):\n%s", diff)
			}
			// The first upload of a build is on its own, like any pipeline.
			if err := parts[0].Validate(); err != nil {
				t.Errorf("first upload does not validate alone: %v", err)
			}
		})
	}
}

func TestSplitErrors(t *testing.T) {
	t.Parallel()
	later := build(600)
	// The first step now waits for the report, which lands in a later upload.
	first := later.Steps[0].(steps.CommandStep)
	first.DependsOn = []steps.Dependency{{Step: "r599"}}
	later.Steps[0] = first

	dup := build(3)
	dup.Steps = append(dup.Steps, steps.CommandStep{Key: "r1", Commands: []string{"true"}})

	tests := []struct {
		name string
		p    steps.Pipeline
		want error
	}{
		{"dependency on a later upload", later, steps.ErrLaterDependency},
		{"duplicate key across uploads", dup, steps.ErrDuplicateKey},
		{"one step too big", steps.Pipeline{Steps: []steps.Step{steps.CommandStep{Key: "a", Commands: []string{"true"}, Parallelism: 501}}}, steps.ErrTooManyJobs},
		{"unknown dependency", steps.Pipeline{Steps: []steps.Step{steps.CommandStep{Key: "a", Commands: []string{"true"}, DependsOn: []steps.Dependency{{Step: "nope"}}}}}, steps.ErrUnknownDependency},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			parts, err := steps.Split(tt.p)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Split() = %d parts, error %v; want %v", len(parts), err, tt.want)
			}
			if parts != nil {
				t.Errorf("Split() returned %d parts with an error", len(parts))
			}
		})
	}
}

func TestValidateRefusesMoreStepsThanAnUpload(t *testing.T) {
	t.Parallel()
	if err := build(600).Validate(); !errors.Is(err, steps.ErrTooManyJobs) {
		t.Fatalf("Validate() of 601 steps = %v, want ErrTooManyJobs", err)
	}
}
