// Package baseline finds the results of past nightly runs of a recipe to
// compare tonight's against: the newest scheduled builds of the pipeline
// whose job for the recipe completed, passed or failed, and the summary
// each uploaded.
//
// A failed night is kept: its bench measured what it measured, and a
// history of passing nights only would cut off the tails of the noise
// (each false alarm leaves out a night far from the level) and never
// show the nights of a regression, which then could not stay open.
// Night.Failed says which they were, for gates that compare with a
// night that passed (baseline_from).
package baseline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// ErrNoBaseline means no baseline could be had: no API token, the API
// refused or could not be reached, or no recent night has results. It is
// a warning for the gate, never a reason to crash; the cause stays in the
// chain for errors.Is (bkapi.ErrUnauthorized, bkapi.ErrUnavailable, ...).
var ErrNoBaseline = errors.New("no baseline")

// ErrNoNights (with ErrNoBaseline) means the fetch worked and found no
// completed night: a new recipe, whose regression gates have no history
// yet.
var ErrNoNights = errors.New("no completed night yet")

// DefaultLookbackSlack is how many scheduled builds beyond n a Fetcher
// examines by default: a week of missed nights.
const DefaultLookbackSlack = 7

const (
	jobPassed = "passed"
	jobFailed = "failed"
)

// Night is one past nightly run of a recipe that completed.
type Night struct {
	BuildNumber int
	BuildURL    string
	CreatedAt   time.Time
	Commit      string
	Summary     []byte // the summary.json the job uploaded, valid JSON
	// JobID is the recipe's job in that build, whose artifacts hold it.
	JobID string
	// Failed says the job failed (a gate, a phase); it still measured
	// what its summary holds. contract.NightPassed says which passed.
	Failed bool
	// Outcomes are the per-question results of the tasks the history step
	// was asked to keep; nil when none were.
	Outcomes []Outcomes
}

// MissReason says why a scheduled build gave no baseline.
type MissReason string

// Reasons a night is missed.
const (
	MissJobAbsent        MissReason = "job not in build"
	MissJobNotCompleted  MissReason = "job did not complete"
	MissArtifactAbsent   MissReason = "summary artifact not found"
	MissArtifactUnusable MissReason = "summary artifact unusable"
)

// Miss is a finished scheduled build that gave no baseline.
type Miss struct {
	BuildNumber int
	BuildURL    string
	CreatedAt   time.Time
	Reason      MissReason
	Detail      string
}

// Result holds the nights found, newest first, and the builds missed on
// the way, newest first, so a gate can tolerate a number of missed nights.
type Result struct {
	Nights []Night
	Missed []Miss
	// Carried counts the nights taken from Fetcher.Prior, not the API.
	Carried int
}

// Fetcher finds baselines through the Buildkite REST API.
type Fetcher struct {
	// API reads the pipeline; nil (no token) makes Last return
	// ErrNoBaseline.
	API *bkapi.Client
	// Branch to look at; the pipeline's default branch when empty.
	Branch string
	// CurrentBuild, when set, is the number of the running build: it and
	// any later build are ignored, so tonight is never its own baseline.
	CurrentBuild int
	// Lookback bounds the finished scheduled builds examined; n +
	// DefaultLookbackSlack when zero.
	Lookback int
	// Builds, when set (Prepare), is the build list every lookup shares,
	// fetched once; nil lists builds on each lookup.
	Builds []bkapi.Build
	// Prior are nights already known, by recipe and build number (an
	// earlier build's history, Prepare): a passed job whose night is
	// known costs no API call.
	Prior map[string]map[int]Night
}

// Last returns up to n nights, newest first, from the newest scheduled
// builds in which the job with stepKey passed or failed and uploaded exactly
// contract.SummaryPath(recipe). Builds still running are passed over; finished ones
// without a usable summary are listed in Result.Missed. Fewer than n
// nights is not an error; none at all is ErrNoBaseline. Every error wraps
// ErrNoBaseline, and the Result then holds what was found before it.
func (f Fetcher) Last(ctx context.Context, recipe, stepKey string, n int) (Result, error) {
	if f.API == nil {
		return Result{}, fmt.Errorf("%w: no Buildkite API client (is an API token configured?): %w", ErrNoBaseline, bkapi.ErrNoToken)
	}
	if n <= 0 {
		return Result{}, nil
	}
	lookback, builds, err := f.scheduled(ctx, n)
	if err != nil {
		return Result{}, err
	}

	var res Result
	examined := 0
	for _, b := range builds {
		if f.CurrentBuild > 0 && b.Number >= f.CurrentBuild {
			continue
		}
		job, ok := b.Job(stepKey)
		passed := ok && contract.NightPassed(job.State, job.SoftFailed, job.ExitStatus)
		completed := passed || ok && job.State == jobFailed
		if !completed && b.FinishedAt.IsZero() {
			continue // may yet pass; neither a night nor a miss
		}
		if examined == lookback {
			break
		}
		examined++

		miss := Miss{BuildNumber: b.Number, BuildURL: b.WebURL, CreatedAt: b.CreatedAt}
		switch {
		case !ok:
			miss.Reason = MissJobAbsent
			miss.Detail = fmt.Sprintf("no job with step key %q", stepKey)
		case !completed:
			miss.Reason = MissJobNotCompleted
			miss.Detail = "job state " + job.State
		default:
			if known, ok := f.Prior[recipe][b.Number]; ok && known.JobID == job.ID {
				known.Failed = !passed
				res.Nights = append(res.Nights, known)
				res.Carried++
				if len(res.Nights) == n {
					return res, nil
				}
				continue
			}
			summary, reason, detail, err := f.summary(ctx, b.Number, job.ID, recipe)
			if err != nil {
				return res, fmt.Errorf("%w: build %d: %w", ErrNoBaseline, b.Number, err)
			}
			if reason == "" {
				res.Nights = append(res.Nights, Night{
					BuildNumber: b.Number,
					BuildURL:    b.WebURL,
					CreatedAt:   b.CreatedAt,
					Commit:      b.Commit,
					Summary:     summary,
					JobID:       job.ID,
					Failed:      !passed,
				})
				if len(res.Nights) == n {
					return res, nil
				}
				continue
			}
			miss.Reason, miss.Detail = reason, detail
		}
		res.Missed = append(res.Missed, miss)
	}
	if len(res.Nights) == 0 {
		return res, fmt.Errorf("%w: %w: none of the last %d finished scheduled builds has a completed %q job with %s",
			ErrNoBaseline, ErrNoNights, examined, stepKey, contract.SummaryPath(recipe))
	}
	return res, nil
}

// scheduled are the newest scheduled builds Last looks through (Builds,
// or the API's), and how many finished ones it may examine for n nights.
func (f Fetcher) scheduled(ctx context.Context, n int) (lookback int, builds []bkapi.Build, err error) {
	lookback = f.Lookback
	if lookback <= 0 {
		lookback = n + DefaultLookbackSlack
	}
	if f.Builds != nil {
		return lookback, f.Builds, nil
	}
	want := lookback
	if f.CurrentBuild > 0 {
		want++ // the running build is scheduled too
	}
	builds, err = f.API.ListScheduledBuilds(ctx, f.Branch, want)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrNoBaseline, err)
	}
	return lookback, builds, nil
}

// summary fetches the recipe's summary from a job. A problem with this
// one night comes back as a reason; an error means the API itself failed,
// which would fail the other nights too.
func (f Fetcher) summary(ctx context.Context, build int, jobID, recipe string) (data []byte, reason MissReason, detail string, err error) {
	path := contract.SummaryPath(recipe)
	arts, err := f.API.ListJobArtifacts(ctx, build, jobID)
	if err != nil {
		if systemic(err) {
			return nil, "", "", err
		}
		return nil, MissArtifactAbsent, err.Error(), nil
	}
	var found *bkapi.Artifact
	for i, a := range arts {
		if a.Path == path {
			found = &arts[i]
			if a.State == bkapi.ArtifactFinished {
				break
			}
		}
	}
	switch {
	case found == nil:
		return nil, MissArtifactAbsent, "no artifact " + path, nil
	case found.State != bkapi.ArtifactFinished:
		return nil, MissArtifactAbsent, fmt.Sprintf("artifact %s is %s", path, found.State), nil
	}
	data, err = f.API.DownloadArtifact(ctx, *found)
	if err != nil {
		if systemic(err) {
			return nil, "", "", err
		}
		return nil, MissArtifactUnusable, err.Error(), nil
	}
	if !json.Valid(data) {
		return nil, MissArtifactUnusable, path + " is not valid JSON", nil
	}
	if err := summary.CheckNumbers(data); err != nil {
		return nil, MissArtifactUnusable, fmt.Sprintf("build %d's %s: %v", build, path, err), nil
	}
	return data, "", "", nil
}

// systemic reports whether err would hit every night, not just this one.
func systemic(err error) bool {
	return errors.Is(err, bkapi.ErrUnauthorized) ||
		errors.Is(err, bkapi.ErrUnavailable) ||
		errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded)
}
