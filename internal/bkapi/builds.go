package bkapi

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/buildkite/go-buildkite/v3/buildkite"
)

// SourceSchedule is the build source of builds started by a pipeline
// schedule.
const SourceSchedule = "schedule"

// Build is the part of a Buildkite build the runner uses.
type Build struct {
	ID         string
	Number     int
	State      string // scheduled, running, passed, failed, canceled, ...
	Source     string // webhook, api, ui, trigger_job or schedule
	Branch     string
	Commit     string
	Message    string
	WebURL     string
	CreatedAt  time.Time
	FinishedAt time.Time // zero while the build runs
	Jobs       []Job
	// Env is the build's environment (its string values).
	Env map[string]string
}

// Job is the part of a build's job the runner uses.
type Job struct {
	ID      string
	StepKey string
	Label   string
	State   string // passed, failed, running, ...
	// SoftFailed: the job failed with an exit status its step lists under
	// soft_fail; State is then "failed".
	SoftFailed bool
	// ExitStatus is the command's exit status, nil before it ends.
	ExitStatus *int
	// Retried: this try was retried (by hand or automatic_retry) in the
	// job RetriedInJobID. The API lists such tries only when asked
	// (GetBuildAllTries).
	Retried        bool
	RetriedInJobID string
	// Signal and SignalReason are what the agent reported when it
	// signalled the job's process or never ran it: SignalReason is
	// agent_stop, cancel, agent_refused, process_run_error,
	// signature_rejected or stack_error (the agent's agent/run_job.go).
	Signal       string
	SignalReason string
	// StartedAt and FinishedAt bound the try's run; zero when it did not
	// start or has not finished.
	StartedAt, FinishedAt time.Time
}

// Job returns the first job of b whose step key is stepKey and that was
// not retried: the latest try.
func (b Build) Job(stepKey string) (Job, bool) {
	for _, j := range b.Jobs {
		if j.StepKey == stepKey && !j.Retried {
			return j, true
		}
	}
	return Job{}, false
}

// DefaultBranch returns the pipeline's default branch.
func (c *Client) DefaultBranch(ctx context.Context) (string, error) {
	var branch string
	err := c.do(ctx, fmt.Sprintf("get pipeline %s/%s", c.cfg.Org, c.cfg.Pipeline), true, func(bk *buildkite.Client) error {
		p, _, err := bk.Pipelines.Get(c.cfg.Org, c.cfg.Pipeline)
		if err != nil {
			return err
		}
		branch = deref(p.DefaultBranch)
		return nil
	})
	if err != nil {
		return "", err
	}
	if branch == "" {
		return "", fmt.Errorf("get pipeline %s/%s: no default branch set", c.cfg.Org, c.cfg.Pipeline)
	}
	return branch, nil
}

// ListScheduledBuilds returns up to limit builds of the pipeline on branch
// (the pipeline's default branch when empty) that a schedule started,
// newest first. The API cannot filter by source, so pages are read until
// limit such builds are found, the pages run out or Config.MaxPages is
// reached; the last case returns what was found without error.
func (c *Client) ListScheduledBuilds(ctx context.Context, branch string, limit int) ([]Build, error) {
	if limit <= 0 {
		return nil, nil
	}
	if branch == "" {
		var err error
		if branch, err = c.DefaultBranch(ctx); err != nil {
			return nil, fmt.Errorf("list scheduled builds: %w", err)
		}
	}
	var out []Build
	seen := map[int]bool{}
	for page := 1; page <= c.cfg.MaxPages; page++ {
		opt := &buildkite.BuildsListOptions{
			Branch:      []string{branch},
			ListOptions: buildkite.ListOptions{Page: page, PerPage: perPage},
		}
		var builds []buildkite.Build
		var next int
		what := fmt.Sprintf("list builds of %s/%s on %s (page %d)", c.cfg.Org, c.cfg.Pipeline, branch, page)
		err := c.do(ctx, what, true, func(bk *buildkite.Client) error {
			bs, resp, err := bk.Builds.ListByPipeline(c.cfg.Org, c.cfg.Pipeline, opt)
			if err != nil {
				return err
			}
			builds, next = bs, resp.NextPage
			return nil
		})
		if err != nil {
			return nil, err
		}
		for _, raw := range builds {
			b := buildFrom(raw)
			// A build created between two page reads shifts the list by
			// one, showing the last of a page again at the top of the next.
			if b.Source != SourceSchedule || seen[b.Number] {
				continue
			}
			seen[b.Number] = true
			out = append(out, b)
			if len(out) == limit {
				return out, nil
			}
		}
		if next == 0 {
			return out, nil
		}
	}
	c.log.Warn("stopped reading builds at the page limit",
		"pipeline", c.cfg.Org+"/"+c.cfg.Pipeline, "pages", c.cfg.MaxPages, "found", len(out), "wanted", limit)
	return out, nil
}

// CreateBuildRequest describes a build to create.
type CreateBuildRequest struct {
	Branch  string // the pipeline's default branch when empty
	Commit  string // "HEAD" when empty
	Message string
	Env     map[string]string
}

// CreateBuild creates a build of the pipeline. It is not retried after a
// failure that may have reached the server, since that could start a
// second build.
func (c *Client) CreateBuild(ctx context.Context, req CreateBuildRequest) (Build, error) {
	if req.Branch == "" {
		var err error
		if req.Branch, err = c.DefaultBranch(ctx); err != nil {
			return Build{}, fmt.Errorf("create build: %w", err)
		}
	}
	if req.Commit == "" {
		req.Commit = "HEAD"
	}
	body := &buildkite.CreateBuild{
		Branch:  req.Branch,
		Commit:  req.Commit,
		Message: req.Message,
		Env:     req.Env,
	}
	var created *buildkite.Build
	what := fmt.Sprintf("create build of %s/%s on %s", c.cfg.Org, c.cfg.Pipeline, req.Branch)
	err := c.do(ctx, what, false, func(bk *buildkite.Client) error {
		b, _, err := bk.Builds.Create(c.cfg.Org, c.cfg.Pipeline, body)
		created = b
		return err
	})
	if err != nil {
		return Build{}, err
	}
	if created == nil || created.Number == nil {
		return Build{}, errors.New(what + ": response has no build number")
	}
	return buildFrom(*created), nil
}

func buildFrom(b buildkite.Build) Build {
	out := Build{
		ID:         deref(b.ID),
		Number:     deref(b.Number),
		State:      deref(b.State),
		Source:     deref(b.Source),
		Branch:     deref(b.Branch),
		Commit:     deref(b.Commit),
		Message:    deref(b.Message),
		WebURL:     deref(b.WebURL),
		CreatedAt:  timeOf(b.CreatedAt),
		FinishedAt: timeOf(b.FinishedAt),
	}
	for k, v := range b.Env {
		if str, ok := v.(string); ok {
			if out.Env == nil {
				out.Env = map[string]string{}
			}
			out.Env[k] = str
		}
	}
	for _, j := range b.Jobs {
		if j == nil {
			continue
		}
		out.Jobs = append(out.Jobs, jobFrom(*j))
	}
	return out
}

func jobFrom(j buildkite.Job) Job {
	return Job{
		ID:             deref(j.ID),
		StepKey:        deref(j.StepKey),
		Label:          deref(j.Label),
		State:          deref(j.State),
		SoftFailed:     j.SoftFailed,
		ExitStatus:     j.ExitStatus,
		Retried:        j.Retried,
		RetriedInJobID: j.RetriedInJobID,
		StartedAt:      timeOf(j.StartedAt),
		FinishedAt:     timeOf(j.FinishedAt),
	}
}

// restBuild is a build as the REST API serves it, with the job fields
// the client library does not know yet (signal, signal_reason).
type restBuild struct {
	buildkite.Build
	Jobs []restJob `json:"jobs"`
}

type restJob struct {
	buildkite.Job
	Signal       *string `json:"signal"`
	SignalReason *string `json:"signal_reason"`
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func timeOf(ts *buildkite.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.Time
}

// GetBuild returns build number of the pipeline with its jobs, the
// latest try of each.
func (c *Client) GetBuild(ctx context.Context, number int) (Build, error) {
	return c.getBuild(ctx, number, false)
}

// GetBuildAllTries is GetBuild with every try of each job, the retried
// ones too: the report step counts the GPU time they took and asks the
// latest try's state for steps that left no results.
func (c *Client) GetBuildAllTries(ctx context.Context, number int) (Build, error) {
	return c.getBuild(ctx, number, true)
}

func (c *Client) getBuild(ctx context.Context, number int, allTries bool) (Build, error) {
	var out Build
	what := fmt.Sprintf("get build %s/%s#%d", c.cfg.Org, c.cfg.Pipeline, number)
	err := c.do(ctx, what, true, func(bk *buildkite.Client) error {
		u := fmt.Sprintf("v2/organizations/%s/pipelines/%s/builds/%d", url.PathEscape(c.cfg.Org), url.PathEscape(c.cfg.Pipeline), number)
		if allTries {
			u += "?include_retried_jobs=true"
		}
		req, err := bk.NewRequest("GET", u, nil)
		if err != nil {
			return err
		}
		var raw restBuild
		if _, err := bk.Do(req, &raw); err != nil {
			return err
		}
		raw.Build.Jobs = nil
		out = buildFrom(raw.Build)
		for _, j := range raw.Jobs {
			job := jobFrom(j.Job)
			job.Signal, job.SignalReason = deref(j.Signal), deref(j.SignalReason)
			out.Jobs = append(out.Jobs, job)
		}
		return nil
	})
	return out, err
}
