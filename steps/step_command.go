package steps

// CommandStep runs commands on an agent. Zero-valued fields are left out of
// the JSON, so Buildkite's defaults apply to them.
type CommandStep struct {
	Label string
	Key   string

	// Commands are run in order in one shell script; the first failure ends
	// the job. One command is written as "command", several as "commands"
	// (the agent joins them with newlines either way). A step may have no
	// command when a plugin does the work.
	Commands []string

	// Agents are the agent tags that pick where the job runs, e.g. "queue".
	Agents map[string]string
	Env    map[string]string
	// Secrets maps an environment variable name to the name of the Buildkite
	// secret whose value it receives.
	Secrets map[string]string
	Plugins []Plugin

	TimeoutInMinutes int
	Retry            *Retry
	// SoftFail lets the build pass when the job fails with a matching exit
	// status.
	SoftFail ExitStatuses
	Priority int

	DependsOn              []Dependency
	AllowDependencyFailure bool

	// ArtifactPaths are globs uploaded when the command finishes.
	ArtifactPaths []string

	// Concurrency limits how many jobs of ConcurrencyGroup run at once
	// across the organisation; Buildkite needs both or neither.
	Concurrency      int
	ConcurrencyGroup string

	// Notify items are written as given, e.g. "github_commit_status" or
	// map[string]any{"slack": "#perf"}.
	Notify []any

	// Skip skips the step; SkipReason (at most 70 characters) is shown as
	// the reason and needs Skip.
	Skip       bool
	SkipReason string
	// If is a Buildkite conditional such as `build.source == "schedule"`.
	If string

	// Parallelism runs that many copies of the job.
	Parallelism int
}

func (CommandStep) isStep() {}

// Plugin is one entry of a step's plugins list, written as
// {"<Name>": <Config>}.
type Plugin struct {
	// Name is the plugin source and version, e.g. "docker#v5.12.0".
	Name string
	// Config is marshalled with encoding/json; nil is written as null.
	Config any
}

// Retry holds a step's automatic and manual retry rules.
type Retry struct {
	// Automatic rules are tried in order; the first match wins.
	Automatic []AutomaticRetry
	Manual    *ManualRetry
}

// AutomaticRetry retries a job that ended a certain way. A rule with
// neither ExitStatus nor Signal nor SignalReason matches any failure.
type AutomaticRetry struct {
	ExitStatus ExitStatuses
	// Signal is a signal name such as "SIGKILL", or "*".
	Signal string
	// SignalReason is one of "*", "none", "cancel", "agent_stop",
	// "agent_refused", "agent_incompatible", "process_run_error",
	// "signature_rejected" or "stack_error".
	SignalReason string
	// Limit is how many times the rule retries, 0 to 10. It is always
	// written, because Buildkite reads a missing limit as 2.
	Limit int
}

// ManualRetry sets whether people may retry a job from the UI. Nil fields
// keep Buildkite's defaults (both true).
type ManualRetry struct {
	Allowed        *bool
	PermitOnPassed *bool
	// Reason is shown on the retry button when Allowed is false.
	Reason string
}

// ExitStatuses matches job exit statuses: any non-zero status, or the
// listed ones (-1 means the agent was lost). The zero value matches nothing
// and is left out of the JSON.
type ExitStatuses struct {
	Any   bool
	Codes []int
}

// IsZero reports whether e matches nothing.
func (e ExitStatuses) IsZero() bool { return !e.Any && len(e.Codes) == 0 }

// Dependency names a step, by key, that must finish first.
type Dependency struct {
	Step string
	// AllowFailure lets the dependent step run when this one fails.
	AllowFailure bool
}

func (d Dependency) value() any {
	if !d.AllowFailure {
		return d.Step
	}
	return map[string]any{"step": d.Step, "allow_failure": true}
}

func (c CommandStep) value() map[string]any {
	o := object{}
	o.setString("label", c.Label)
	o.setString("key", c.Key)
	switch len(c.Commands) {
	case 0:
	case 1:
		o["command"] = c.Commands[0]
	default:
		o["commands"] = c.Commands
	}
	o.setStrings("agents", c.Agents)
	o.setStrings("env", c.Env)
	o.setStrings("secrets", c.Secrets)
	if len(c.Plugins) > 0 {
		list := make([]any, 0, len(c.Plugins))
		for _, p := range c.Plugins {
			list = append(list, map[string]any{p.Name: p.Config})
		}
		o["plugins"] = list
	}
	o.setInt("timeout_in_minutes", c.TimeoutInMinutes)
	if c.Retry != nil {
		if r := c.Retry.value(); len(r) > 0 {
			o["retry"] = r
		}
	}
	if c.SoftFail.Any {
		o["soft_fail"] = true
	} else if len(c.SoftFail.Codes) > 0 {
		list := make([]any, 0, len(c.SoftFail.Codes))
		for _, code := range c.SoftFail.Codes {
			list = append(list, map[string]any{"exit_status": code})
		}
		o["soft_fail"] = list
	}
	o.setInt("priority", c.Priority)
	o.setDependsOn(c.DependsOn)
	o.setTrue("allow_dependency_failure", c.AllowDependencyFailure)
	o.setList("artifact_paths", c.ArtifactPaths)
	o.setInt("concurrency", c.Concurrency)
	o.setString("concurrency_group", c.ConcurrencyGroup)
	if len(c.Notify) > 0 {
		o["notify"] = c.Notify
	}
	setSkip(o, c.Skip, c.SkipReason)
	o.setString("if", c.If)
	o.setInt("parallelism", c.Parallelism)
	return o
}

func setSkip(o object, skip bool, reason string) {
	switch {
	case skip && reason != "":
		o["skip"] = reason
	case skip:
		o["skip"] = true
	}
}

func (r Retry) value() map[string]any {
	o := object{}
	if len(r.Automatic) > 0 {
		list := make([]any, 0, len(r.Automatic))
		for _, a := range r.Automatic {
			list = append(list, a.value())
		}
		o["automatic"] = list
	}
	if m := r.Manual; m != nil {
		mo := object{}
		if m.Allowed != nil {
			mo["allowed"] = *m.Allowed
		}
		if m.PermitOnPassed != nil {
			mo["permit_on_passed"] = *m.PermitOnPassed
		}
		mo.setString("reason", m.Reason)
		o["manual"] = mo
	}
	return o
}

func (a AutomaticRetry) value() map[string]any {
	o := object{"limit": a.Limit}
	switch {
	case a.ExitStatus.Any:
		o["exit_status"] = "*"
	case len(a.ExitStatus.Codes) == 1:
		o["exit_status"] = a.ExitStatus.Codes[0]
	case len(a.ExitStatus.Codes) > 1:
		o["exit_status"] = a.ExitStatus.Codes
	}
	o.setString("signal", a.Signal)
	o.setString("signal_reason", a.SignalReason)
	return o
}
