// Package buildkite is the runner's one door to Buildkite: the agent's
// commands a step uses in its build (annotate, artifact upload and
// download, secret get) and the REST client, whose token comes from the
// environment or the agent's secrets. The runner's CLI builds one Door
// per command and hands it in; no other package starts buildkite-agent
// or builds a REST client.
package buildkite

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/runner/internal/proc"
)

// Binary is the agent's program, found on PATH as a job finds it.
const Binary = "buildkite-agent"

// Agent runs buildkite-agent commands.
type Agent struct {
	// Procs runs the agent; nil runs it with proc.Exec.
	Procs proc.Runner
	// Env is the agent's environment: it needs the job's
	// BUILDKITE_AGENT_ACCESS_TOKEN and BUILDKITE_JOB_ID.
	Env []string
	// Log, when set, gets each command line ("$ buildkite-agent ...")
	// and the agent's output of Run, Annotate, Upload and Download.
	Log io.Writer
	// Spare marks the calls to survive a second cancel (proc.Spec.Spare):
	// they carry what exists to the build within its deadline.
	Spare bool
}

// WithEnv is the agent with environment env.
func (a Agent) WithEnv(env []string) Agent {
	a.Env = env
	return a
}

func (a Agent) procs() proc.Runner {
	if a.Procs == nil {
		return proc.Exec{}
	}
	return a.Procs
}

// spec is the agent's command line for args, the one place it is built.
func (a Agent) spec(args ...string) proc.Spec {
	return proc.Spec{Argv: append([]string{Binary}, args...), Env: a.Env, Spare: a.Spare}
}

// AnnotateSpec annotates the build under context with style (and
// priority, when not empty); body reaches the agent on stdin.
func (a Agent) AnnotateSpec(context, style, priority, body string) proc.Spec {
	args := []string{"annotate", "--context", context, "--style", style}
	if priority != "" {
		args = append(args, "--priority", priority)
	}
	s := a.spec(args...)
	s.Stdin = strings.NewReader(body)
	return s
}

// UploadSpec uploads the files paths (a glob, or several joined by ";")
// names as this job's artifacts.
func (a Agent) UploadSpec(paths string) proc.Spec {
	return a.spec("artifact", "upload", paths)
}

// DownloadSpec downloads the artifacts of step (a step key) query
// matches into dest, their paths kept.
func (a Agent) DownloadSpec(query, dest, step string) proc.Spec {
	args := []string{"artifact", "download", query, dest}
	if step != "" {
		args = append(args, "--step", step)
	}
	return a.spec(args...)
}

// SecretSpec reads the Buildkite secret name (Secret runs it).
func (a Agent) SecretSpec(name string) proc.Spec {
	return a.spec("secret", "get", name)
}

// StepStateSpec asks the state of this build's step with key step
// (StepState runs it).
func (a Agent) StepStateSpec(step string) proc.Spec {
	return a.spec("step", "get", "state", "--step", step)
}

// Run runs spec, one of the specs above: its command line and output go
// to Log. Without a Log nothing is shown, and a failure carries the last
// line of the agent's stderr.
func (a Agent) Run(ctx context.Context, spec proc.Spec) error {
	if a.Log != nil {
		fmt.Fprintf(a.Log, "$ %s\n", proc.FormatArgv(spec.Argv))
		spec.Stdout, spec.Stderr = a.Log, a.Log
		return a.procs().Run(ctx, spec)
	}
	var errOut strings.Builder
	spec.Stderr = &errOut
	return lastWord(a.procs().Run(ctx, spec), errOut.String())
}

// lastWord adds the last line of the agent's stderr to its failure.
func lastWord(err error, stderr string) error {
	if err == nil {
		return nil
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != "" {
		err = fmt.Errorf("%w: %s", err, last)
	}
	return err
}

// Annotate annotates the build (AnnotateSpec).
func (a Agent) Annotate(ctx context.Context, context, style, priority, body string) error {
	return a.Run(ctx, a.AnnotateSpec(context, style, priority, body))
}

// Upload uploads artifacts (UploadSpec).
func (a Agent) Upload(ctx context.Context, paths string) error {
	return a.Run(ctx, a.UploadSpec(paths))
}

// Download downloads artifacts (DownloadSpec).
func (a Agent) Download(ctx context.Context, query, dest, step string) error {
	return a.Run(ctx, a.DownloadSpec(query, dest, step))
}

// Secret reads a Buildkite secret. The value is never logged: the agent
// also redacts it from the job log.
func (a Agent) Secret(ctx context.Context, name string) (string, error) {
	var out strings.Builder
	s := a.SecretSpec(name)
	s.Stdout, s.Stderr = &out, io.Discard
	err := a.procs().Run(ctx, s)
	return out.String(), err
}

// StepState is the state of this build's step with key step (running,
// finished, ...), as `buildkite-agent step get state` says it.
func (a Agent) StepState(ctx context.Context, step string) (string, error) {
	var out, errOut strings.Builder
	s := a.StepStateSpec(step)
	s.Stdout, s.Stderr = &out, &errOut
	err := a.procs().Run(ctx, s)
	return strings.TrimSpace(out.String()), lastWord(err, errOut.String())
}

// Door is the agent and the REST API of this build's pipeline.
type Door struct {
	Agent Agent
	// Getenv reads the job's variables: the token's, the organization
	// and pipeline slugs.
	Getenv func(string) string
}

// New is the door of a process with environment environ, read through
// getenv, that runs the agent with procs.
func New(procs proc.Runner, getenv func(string) string, environ []string) Door {
	return Door{Agent: Agent{Procs: procs, Env: environ}, Getenv: getenv}
}

func (d Door) getenv(k string) string {
	if d.Getenv == nil {
		return ""
	}
	return d.Getenv(k)
}

// Token is the token in the variable tokenEnv, or else the agent's
// secret tokenSecret.
func (d Door) Token(ctx context.Context, tokenEnv, tokenSecret string) (string, error) {
	return bkapi.TokenFromEnvOrSecret(ctx, d.getenv, d.Agent.Secret, tokenEnv, tokenSecret)
}

// API is the REST client of this build's pipeline at url, with Token's
// token. Each command asks for it when it first needs it: a step that
// never calls the API needs no token.
func (d Door) API(ctx context.Context, url, tokenEnv, tokenSecret string) (*bkapi.Client, error) {
	token, err := d.Token(ctx, tokenEnv, tokenSecret)
	if err != nil {
		return nil, err
	}
	return bkapi.New(bkapi.Config{BaseURL: url, Token: token,
		Org: d.getenv("BUILDKITE_ORGANIZATION_SLUG"), Pipeline: d.getenv("BUILDKITE_PIPELINE_SLUG")})
}
