package steps

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Limits Buildkite enforces on an upload.
const (
	MaxJobsPerUpload = 500
	// MaxStepsPerUpload is the agent's own limit on the steps of one file.
	MaxStepsPerUpload      = 500
	MaxSkipReasonLen       = 70
	MaxConcurrencyGroupLen = 200
	MaxRetryLimit          = 10
)

// Errors Validate wraps, for errors.Is.
var (
	ErrNilStep           = errors.New("nil step")
	ErrInvalidKey        = errors.New("invalid step key")
	ErrDuplicateKey      = errors.New("duplicate step key")
	ErrUnknownDependency = errors.New("dependency on an unknown step key")
	ErrDependencyCycle   = errors.New("dependency cycle")
	ErrNoCommand         = errors.New("command step needs a command or a plugin")
	ErrEmptyGroup        = errors.New("group needs a name and at least one step")
	ErrNestedGroup       = errors.New("group inside a group")
	ErrConcurrency       = errors.New("concurrency and concurrency_group must be set together")
	ErrRetry             = errors.New("invalid retry rule")
	ErrSkip              = errors.New("invalid skip")
	ErrTooManyJobs       = errors.New("too many jobs for one upload")
	ErrLaterDependency   = errors.New("dependency on a step of a later upload")
	ErrInvalidAttribute  = errors.New("invalid step attribute")
)

var signalReasons = []string{
	"*", "none", "cancel", "agent_stop", "agent_refused", "agent_incompatible",
	"process_run_error", "signature_rejected", "stack_error",
}

// Validate reports every problem Buildkite would reject p for, or that
// would make it mean something other than it says, joined with
// errors.Join. Each problem names the step by its path, e.g.
// "steps[2].steps[0]", and wraps one of the Err* sentinels.
//
// Dependencies must name keys defined in p itself: an upload that depends
// on steps of an earlier upload is not supported. A command step counts as
// Parallelism jobs (at least one) and a wait step as one job towards
// MaxJobsPerUpload.
func (p Pipeline) Validate() error {
	return p.validate(validator{keys: map[string]string{}})
}

// validateAfter is Validate for one upload of a build whose earlier uploads
// defined the keys in earlier: dependencies on them are allowed.
func (p Pipeline) validateAfter(earlier map[string]bool) error {
	return p.validate(validator{keys: map[string]string{}, earlier: earlier})
}

func (p Pipeline) validate(v validator) error {
	for i, s := range p.Steps {
		v.step(fmt.Sprintf("steps[%d]", i), s, false)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Env)) {
		v.envName("pipeline", name)
	}
	v.dependencies()
	if v.jobs > MaxJobsPerUpload {
		v.errorf("pipeline: %w: %d jobs, at most %d (see Split)", ErrTooManyJobs, v.jobs, MaxJobsPerUpload)
	}
	if len(p.Steps) > MaxStepsPerUpload {
		v.errorf("pipeline: %w: %d steps, at most %d (see Split)", ErrTooManyJobs, len(p.Steps), MaxStepsPerUpload)
	}
	return errors.Join(v.errs...)
}

type validator struct {
	errs []error
	jobs int
	// keys maps each step key to the path of the step that defines it.
	keys map[string]string
	deps []edge
	// earlier are the keys of the build's earlier uploads.
	earlier map[string]bool
}

// edge is a depends_on entry: the step at path (with key from, if any)
// waits for key to.
type edge struct {
	path, from, to string
}

func (v *validator) errorf(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

func (v *validator) step(path string, s Step, inGroup bool) {
	switch s := concrete(s).(type) {
	case CommandStep:
		v.command(path, s)
	case GroupStep:
		v.group(path, s, inGroup)
	case WaitStep:
		v.jobs++
		v.key(path, s.Key)
		v.dependsOn(path, s.Key, s.DependsOn)
	default:
		v.errorf("%s: %w", path, ErrNilStep)
	}
}

func (v *validator) group(path string, g GroupStep, inGroup bool) {
	if inGroup {
		v.errorf("%s: %w: Buildkite does not nest groups", path, ErrNestedGroup)
	}
	if strings.TrimSpace(g.Group) == "" || len(g.Steps) == 0 {
		v.errorf("%s: %w: name %q, %d steps", path, ErrEmptyGroup, g.Group, len(g.Steps))
	}
	v.key(path, g.Key)
	v.dependsOn(path, g.Key, g.DependsOn)
	for i, s := range g.Steps {
		v.step(fmt.Sprintf("%s.steps[%d]", path, i), s, true)
	}
}

func (v *validator) command(path string, c CommandStep) {
	v.jobs += max(1, c.Parallelism)
	v.key(path, c.Key)
	v.dependsOn(path, c.Key, c.DependsOn)

	if len(c.Commands) == 0 && len(c.Plugins) == 0 {
		v.errorf("%s: %w", path, ErrNoCommand)
	}
	for i, p := range c.Plugins {
		if strings.TrimSpace(p.Name) == "" {
			v.errorf("%s: plugins[%d]: %w: empty plugin name", path, i, ErrInvalidAttribute)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Env)) {
		v.envName(path, name)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Secrets)) {
		secret := c.Secrets[name]
		if name == "" || secret == "" {
			v.errorf("%s: secrets: %w: variable %q gets secret %q; neither may be empty", path, ErrInvalidAttribute, name, secret)
		}
	}
	for _, f := range []struct {
		name  string
		value int
	}{
		{"timeout_in_minutes", c.TimeoutInMinutes},
		{"parallelism", c.Parallelism},
		{"concurrency", c.Concurrency},
	} {
		if f.value < 0 {
			v.errorf("%s: %w: %s is %d, must not be negative", path, ErrInvalidAttribute, f.name, f.value)
		}
	}
	if (c.Concurrency > 0) != (c.ConcurrencyGroup != "") {
		v.errorf("%s: %w: concurrency %d, concurrency_group %q", path, ErrConcurrency, c.Concurrency, c.ConcurrencyGroup)
	}
	if len(c.ConcurrencyGroup) > MaxConcurrencyGroupLen {
		v.errorf("%s: %w: concurrency_group is %d characters, at most %d", path, ErrConcurrency, len(c.ConcurrencyGroup), MaxConcurrencyGroupLen)
	}
	v.exitStatuses(path+": soft_fail", c.SoftFail)
	if c.Retry != nil {
		v.retry(path, *c.Retry)
	}
	v.skip(path, c.Skip, c.SkipReason)
}

func (v *validator) retry(path string, r Retry) {
	for i, a := range r.Automatic {
		where := fmt.Sprintf("%s: retry.automatic[%d]", path, i)
		if a.Limit < 0 || a.Limit > MaxRetryLimit {
			v.errorf("%s: %w: limit %d is outside 0..%d", where, ErrRetry, a.Limit, MaxRetryLimit)
		}
		if a.SignalReason != "" && !slices.Contains(signalReasons, a.SignalReason) {
			v.errorf("%s: %w: signal_reason %q is not one of %s", where, ErrRetry, a.SignalReason, strings.Join(signalReasons, ", "))
		}
		v.exitStatuses(where, a.ExitStatus)
	}
}

func (v *validator) exitStatuses(where string, e ExitStatuses) {
	if e.Any && len(e.Codes) > 0 {
		v.errorf("%s: %w: exit status is both any and %v", where, ErrInvalidAttribute, e.Codes)
	}
}

func (v *validator) skip(path string, skip bool, reason string) {
	if reason != "" && !skip {
		v.errorf("%s: %w: skip reason %q given but Skip is false", path, ErrSkip, reason)
	}
	if n := len([]rune(reason)); n > MaxSkipReasonLen {
		v.errorf("%s: %w: skip reason is %d characters, at most %d", path, ErrSkip, n, MaxSkipReasonLen)
	}
}

func (v *validator) envName(path, name string) {
	if name == "" || strings.ContainsAny(name, "=\x00") {
		v.errorf("%s: env: %w: variable name %q", path, ErrInvalidAttribute, name)
	}
}

func (v *validator) key(path, key string) {
	if key == "" {
		return
	}
	switch {
	case len(key) > MaxKeyLen:
		v.errorf("%s: %w: %q is %d characters, at most %d", path, ErrInvalidKey, key, len(key), MaxKeyLen)
	case !keyPattern.MatchString(key):
		v.errorf("%s: %w: %q may hold only letters, digits and _-:${}., (use steps.Key)", path, ErrInvalidKey, key)
	case uuidPattern.MatchString(key):
		v.errorf("%s: %w: %q looks like a UUID", path, ErrInvalidKey, key)
	}
	if first, ok := v.keys[key]; ok {
		v.errorf("%s: %w: %q is already the key of %s", path, ErrDuplicateKey, key, first)
		return
	}
	v.keys[key] = path
}

func (v *validator) dependsOn(path, from string, deps []Dependency) {
	for _, d := range deps {
		v.deps = append(v.deps, edge{path: path, from: from, to: d.Step})
	}
}

// dependencies checks, once every key is known, that each dependency names
// a step and that no steps wait for each other in a cycle.
func (v *validator) dependencies() {
	graph := map[string][]string{}
	for _, d := range v.deps {
		if _, ok := v.keys[d.to]; !ok {
			if v.earlier[d.to] {
				continue
			}
			v.errorf("%s: %w: %q", d.path, ErrUnknownDependency, d.to)
			continue
		}
		if d.from != "" {
			graph[d.from] = append(graph[d.from], d.to)
		}
	}

	const (
		unvisited = iota
		onPath
		done
	)
	state := map[string]int{}
	var stack []string
	var visit func(k string)
	visit = func(k string) {
		state[k] = onPath
		stack = append(stack, k)
		for _, next := range graph[k] {
			switch state[next] {
			case onPath:
				cycle := append(slices.Clone(stack[slices.Index(stack, next):]), next)
				v.errorf("%s: %w: %s", v.keys[next], ErrDependencyCycle, strings.Join(cycle, " -> "))
			case unvisited:
				visit(next)
			}
		}
		stack = stack[:len(stack)-1]
		state[k] = done
	}
	// Sorted so that the same pipeline reports the same cycles.
	for _, k := range slices.Sorted(maps.Keys(graph)) {
		if state[k] == unvisited {
			visit(k)
		}
	}
}
