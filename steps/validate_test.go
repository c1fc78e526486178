package steps_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/steps"
	"github.com/google/go-cmp/cmp"
)

var sentinels = map[error]string{
	steps.ErrNilStep:           "ErrNilStep",
	steps.ErrInvalidKey:        "ErrInvalidKey",
	steps.ErrDuplicateKey:      "ErrDuplicateKey",
	steps.ErrUnknownDependency: "ErrUnknownDependency",
	steps.ErrDependencyCycle:   "ErrDependencyCycle",
	steps.ErrNoCommand:         "ErrNoCommand",
	steps.ErrEmptyGroup:        "ErrEmptyGroup",
	steps.ErrNestedGroup:       "ErrNestedGroup",
	steps.ErrConcurrency:       "ErrConcurrency",
	steps.ErrRetry:             "ErrRetry",
	steps.ErrSkip:              "ErrSkip",
	steps.ErrTooManyJobs:       "ErrTooManyJobs",
	steps.ErrInvalidAttribute:  "ErrInvalidAttribute",
}

// problems splits a joined error into "path: Sentinel" lines, sorted as
// Validate returns them.
func problems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	joined, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Validate() error %v is not a joined error", err)
	}
	var out []string
	for _, e := range joined.Unwrap() {
		name := "unclassified"
		for s, n := range sentinels {
			if errors.Is(e, s) {
				name = n
			}
		}
		path, _, _ := strings.Cut(e.Error(), ":")
		out = append(out, path+": "+name)
	}
	return out
}

func cmd(key string, mods ...func(*steps.CommandStep)) steps.CommandStep {
	c := steps.CommandStep{Key: key, Commands: []string{"true"}}
	for _, m := range mods {
		m(&c)
	}
	return c
}

func dependsOn(keys ...string) func(*steps.CommandStep) {
	return func(c *steps.CommandStep) { c.DependsOn = deps(keys...) }
}

// deps are dependencies on keys, none of which may fail.
func deps(keys ...string) []steps.Dependency {
	out := make([]steps.Dependency, 0, len(keys))
	for _, k := range keys {
		out = append(out, steps.Dependency{Step: k})
	}
	return out
}

func TestValidate(t *testing.T) {
	t.Parallel()
	many := make([]steps.Step, 0, steps.MaxJobsPerUpload)
	for i := range steps.MaxJobsPerUpload {
		many = append(many, cmd(fmt.Sprintf("s%d", i)))
	}

	tests := []struct {
		name string
		p    steps.Pipeline
		want []string
	}{
		{
			name: "valid pipeline",
			p: steps.Pipeline{Steps: []steps.Step{
				cmd("a"),
				steps.WaitStep{Key: "w", DependsOn: deps("a")},
				steps.GroupStep{Group: "g", Key: "g", Steps: []steps.Step{cmd("b", dependsOn("a", "w"))}},
				cmd("c", dependsOn("g", "b")),
				cmd("${INTERPOLATED}.key,ok:1"),
			}},
		},
		{
			name: "empty pipeline",
			p:    steps.Pipeline{},
		},
		{
			name: "500 jobs is the limit",
			p:    steps.Pipeline{Steps: many},
		},
		{
			name: "501 jobs through parallelism",
			p: steps.Pipeline{Steps: append(many[:len(many)-1:len(many)-1],
				cmd("p", func(c *steps.CommandStep) { c.Parallelism = 2 }))},
			want: []string{"pipeline: ErrTooManyJobs"},
		},
		{
			name: "wait steps and grouped steps count as jobs",
			p: steps.Pipeline{Steps: append(many[:len(many)-1:len(many)-1],
				steps.GroupStep{Group: "g", Steps: []steps.Step{steps.WaitStep{}, cmd("")}})},
			want: []string{"pipeline: ErrTooManyJobs"},
		},
		{
			name: "nil steps",
			p:    steps.Pipeline{Steps: []steps.Step{nil, (*steps.CommandStep)(nil)}},
			want: []string{"steps[0]: ErrNilStep", "steps[1]: ErrNilStep"},
		},
		{
			name: "bad keys",
			p: steps.Pipeline{Steps: []steps.Step{
				cmd("has space"),
				cmd("has/slash"),
				cmd(strings.Repeat("k", 101)),
				cmd("123e4567-e89b-12d3-a456-426614174000"),
				steps.WaitStep{Key: "ünïcödé"},
				steps.GroupStep{Group: "g", Key: "a\nb", Steps: []steps.Step{cmd("")}},
			}},
			want: []string{
				"steps[0]: ErrInvalidKey", "steps[1]: ErrInvalidKey", "steps[2]: ErrInvalidKey",
				"steps[3]: ErrInvalidKey", "steps[4]: ErrInvalidKey", "steps[5]: ErrInvalidKey",
			},
		},
		{
			name: "duplicate keys across kinds and groups",
			p: steps.Pipeline{Steps: []steps.Step{
				cmd("a"),
				steps.WaitStep{Key: "a"},
				steps.GroupStep{Group: "g", Key: "a", Steps: []steps.Step{cmd("a")}},
			}},
			want: []string{
				"steps[1]: ErrDuplicateKey", "steps[2]: ErrDuplicateKey", "steps[2].steps[0]: ErrDuplicateKey",
			},
		},
		{
			name: "unknown dependencies",
			p: steps.Pipeline{Steps: []steps.Step{
				cmd("a", dependsOn("missing")),
				steps.WaitStep{DependsOn: []steps.Dependency{{Step: ""}}},
				steps.GroupStep{Group: "g", DependsOn: deps("A"), Steps: []steps.Step{cmd("")}},
			}},
			want: []string{
				"steps[0]: ErrUnknownDependency", "steps[1]: ErrUnknownDependency", "steps[2]: ErrUnknownDependency",
			},
		},
		{
			name: "dependency cycles",
			p: steps.Pipeline{Steps: []steps.Step{
				cmd("a", dependsOn("b")),
				cmd("b", dependsOn("c")),
				cmd("c", dependsOn("a")),
				cmd("self", dependsOn("self")),
				cmd("d", dependsOn("a")),
			}},
			want: []string{"steps[0]: ErrDependencyCycle", "steps[3]: ErrDependencyCycle"},
		},
		{
			name: "command step without command or plugin",
			p:    steps.Pipeline{Steps: []steps.Step{steps.CommandStep{Label: "nothing"}}},
			want: []string{"steps[0]: ErrNoCommand"},
		},
		{
			name: "groups",
			p: steps.Pipeline{Steps: []steps.Step{
				steps.GroupStep{Group: "empty"},
				steps.GroupStep{Group: " ", Steps: []steps.Step{cmd("")}},
				steps.GroupStep{Group: "outer", Steps: []steps.Step{
					steps.GroupStep{Group: "inner", Steps: []steps.Step{cmd("")}},
				}},
			}},
			want: []string{"steps[0]: ErrEmptyGroup", "steps[1]: ErrEmptyGroup", "steps[2].steps[0]: ErrNestedGroup"},
		},
		{
			name: "concurrency",
			p: steps.Pipeline{Steps: []steps.Step{
				cmd("", func(c *steps.CommandStep) { c.Concurrency = 1 }),
				cmd("", func(c *steps.CommandStep) { c.ConcurrencyGroup = "g" }),
				cmd("", func(c *steps.CommandStep) { c.Concurrency, c.ConcurrencyGroup = 1, strings.Repeat("g", 201) }),
				cmd("", func(c *steps.CommandStep) { c.Concurrency, c.ConcurrencyGroup = 1, "ok" }),
			}},
			want: []string{"steps[0]: ErrConcurrency", "steps[1]: ErrConcurrency", "steps[2]: ErrConcurrency"},
		},
		{
			name: "retry",
			p: steps.Pipeline{Steps: []steps.Step{cmd("", func(c *steps.CommandStep) {
				c.Retry = &steps.Retry{Automatic: []steps.AutomaticRetry{
					{Limit: 0},
					{Limit: 10},
					{Limit: 11},
					{Limit: -1},
					{SignalReason: "agent_lost", Limit: 1},
					{ExitStatus: steps.ExitStatuses{Any: true, Codes: []int{1}}, Limit: 1},
				}}
			})}},
			want: []string{
				"steps[0]: ErrRetry", "steps[0]: ErrRetry", "steps[0]: ErrRetry", "steps[0]: ErrInvalidAttribute",
			},
		},
		{
			name: "skip",
			p: steps.Pipeline{Steps: []steps.Step{
				cmd("", func(c *steps.CommandStep) { c.Skip, c.SkipReason = true, strings.Repeat("é", 70) }),
				cmd("", func(c *steps.CommandStep) { c.Skip, c.SkipReason = true, strings.Repeat("x", 71) }),
				cmd("", func(c *steps.CommandStep) { c.SkipReason = "no skip" }),
			}},
			want: []string{"steps[1]: ErrSkip", "steps[2]: ErrSkip"},
		},
		{
			name: "other attributes",
			p: steps.Pipeline{
				Env: map[string]string{"": "x", "A=B": "y"},
				Steps: []steps.Step{cmd("", func(c *steps.CommandStep) {
					c.TimeoutInMinutes, c.Parallelism, c.Concurrency, c.ConcurrencyGroup = -1, -1, -1, "g"
					c.Plugins = []steps.Plugin{{Name: " "}}
					c.Env = map[string]string{"OK": "1", "NUL\x00": "2"}
					c.Secrets = map[string]string{"TOKEN": ""}
					c.SoftFail = steps.ExitStatuses{Any: true, Codes: []int{2}}
				})},
			},
			want: []string{
				"steps[0]: ErrInvalidAttribute", // plugin name
				"steps[0]: ErrInvalidAttribute", // env name
				"steps[0]: ErrInvalidAttribute", // secret
				"steps[0]: ErrInvalidAttribute", // timeout
				"steps[0]: ErrInvalidAttribute", // parallelism
				"steps[0]: ErrInvalidAttribute", // concurrency
				"steps[0]: ErrConcurrency",      // negative concurrency has no group partner
				"steps[0]: ErrInvalidAttribute", // soft fail
				"pipeline: ErrInvalidAttribute", // env ""
				"pipeline: ErrInvalidAttribute", // env "A=B"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := problems(t, tt.p.Validate())
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Validate() problems diff (-got +want):\n%s\nerror: %v", diff, tt.p.Validate())
			}
		})
	}
}

func TestValidateMessages(t *testing.T) {
	t.Parallel()
	p := steps.Pipeline{Steps: []steps.Step{
		cmd("a", dependsOn("b")),
		cmd("b", dependsOn("a")),
		steps.GroupStep{Group: "g", Steps: []steps.Step{cmd("a b")}},
	}}
	got := p.Validate().Error()
	for _, want := range []string{
		`steps[2].steps[0]: invalid step key: "a b" may hold only`,
		`steps[0]: dependency cycle: a -> b -> a`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Validate() error = %q, want it to contain %q", got, want)
		}
	}
}

func TestValidateIsDeterministic(t *testing.T) {
	t.Parallel()
	p := steps.Pipeline{
		Env: map[string]string{"": "1", "=": "2", "a=": "3"},
		Steps: []steps.Step{
			cmd("a", dependsOn("b")), cmd("b", dependsOn("a")),
			cmd("c", dependsOn("d")), cmd("d", dependsOn("c")),
		},
	}
	first := p.Validate().Error()
	for range 20 {
		if got := p.Validate().Error(); got != first {
			t.Fatalf("Validate() error changed between calls:\n%s\nthen:\n%s", first, got)
		}
	}
}
