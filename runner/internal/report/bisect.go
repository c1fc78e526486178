package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/benchkite/benchkite/internal/bisect"
	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/numfmt"
	"github.com/benchkite/benchkite/internal/oci"
	"github.com/benchkite/benchkite/runner/internal/gate"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// bisector is what the report step needs to bisect: the Buildkite API
// and the registry client, nil for the default (tests point both at
// stand-ins).
type bisector struct {
	client   *bkapi.Client
	registry *oci.Client
	branch   string
	build    int
	// timeout bounds the step's bisect calls; bisectTimeout when zero.
	timeout time.Duration
}

// bisectStep goes on with the bisect this build belongs to (its env
// carries BENCHKITE_BISECT, with the MAC the triggering report step gave
// it), or starts one for each recipe whose
// regression gate found a change point between two known vLLM commits and
// whose profile gives a bisect budget. It only warns: the report's
// verdict does not depend on it. Cancelling a bisect build stops the
// chain: its report step is what triggers the next.
func bisectStep(ctx context.Context, b bisector, build gate.Build, sums []summary.Summary, state, mac string, out io.Writer) {
	timeout := b.timeout
	if timeout <= 0 {
		timeout = bisectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if state != "" {
		if err := bisect.Authentic(b.client, state, mac); err != nil {
			fmt.Fprintf(out, "runner: warning: bisect: %v\n", err)
			return
		}
		if err := b.advance(ctx, sums, state, out); err != nil {
			fmt.Fprintf(out, "runner: warning: bisect: %v\n", err)
		}
		return
	}
	started := map[string]bool{}
	for _, c := range build.Bisect {
		s := c.Summary
		if started[s.Recipe] || s.GPUTime == nil || s.GPUTime.BisectBudget <= 0 {
			continue
		}
		started[s.Recipe] = true // one bisect per recipe
		if err := b.start(ctx, s, c.Gate, out); err != nil {
			fmt.Fprintf(out, "runner: warning: bisect %s: %v\n", s.Recipe, err)
		}
	}
}

// bisectTimeout bounds the bisect's registry and API calls in the report
// step, whatever a registry answers: the report is written either way.
const bisectTimeout = 3 * time.Minute

// imageRepo is the repository of s's image, without tag or digest.
func imageRepo(s summary.Summary) string {
	ref := s.Image
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

func (b bisector) start(ctx context.Context, s summary.Summary, g summary.GateResult, out io.Writer) error {
	// One bisect per recipe at a time: a scheduled or running bisect
	// build of this recipe goes on with its own.
	active, err := b.client.ActiveBuilds(ctx)
	if err != nil {
		return err
	}
	for _, ab := range active {
		if st, err := bisect.Decode(ab.Env[bisect.Env]); err == nil && st.Recipe == s.Recipe {
			fmt.Fprintf(out, "runner: bisect %s: build #%d is bisecting it already\n", s.Recipe, ab.Number)
			return nil
		}
	}
	cp := g.ChangePoint
	if err := gate.CheckRegime(*cp.GoodRegime); err != nil {
		return fmt.Errorf("no bisect: %w", err)
	}
	repo := imageRepo(s)
	cands, err := bisect.Candidates(ctx, b.registry, repo, cp.LastGood.VLLMCommit, cp.FirstBad.VLLMCommit)
	if err != nil {
		return err
	}
	st, err := bisect.Start(s.Recipe, g.Metric, cp.LastGood.VLLMCommit, cp.FirstBad.VLLMCommit, cands, b.build, s.GPUTime.BisectBudget)
	if err != nil {
		return err
	}
	st.Subject, st.GoodValue, st.BadValue = g.Subject, cp.Before, cp.After
	r := cp.GoodRegime
	st.Regime = bisect.Regime{Nights: r.Nights, Known: r.Known, HigherIsBetter: r.HigherIsBetter, FloorPct: r.FloorPct}
	if st.Done() {
		fmt.Fprintf(out, "runner: bisect %s: no image between the last good and the first bad night; vLLM %s is the first bad commit\n", s.Recipe, cp.FirstBad.VLLMCommit)
		return bisect.Announce(ctx, b.client, st)
	}
	nb, commit, err := bisect.Trigger(ctx, b.client, st, b.branch)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "runner: bisect %s: %d candidate image(s) in %s; build #%d tests vLLM %s (at most %d builds)\n",
		s.Recipe, len(cands), repo, nb.Number, commit, bisect.MaxBuilds(len(cands)))
	return nil
}

// advance judges this bisect build's run of the recipe as the nightly
// judged the regression (gate.JudgeProbe) and triggers the next
// midpoint, or announces the first bad commit. A build that cannot judge
// its commit triggers it once more; a second one stops the bisect.
func (b bisector) advance(ctx context.Context, sums []summary.Summary, state string, out io.Writer) error {
	st, err := bisect.Decode(state)
	if err != nil {
		return err
	}
	commit, err := st.Next()
	if err != nil {
		return err
	}
	var probe gate.Probe
	gpuh := 0.0
	judgeErr := fmt.Errorf("%w: build #%d left no result of %s", gate.ErrInconclusive, b.build, st.Recipe)
	for _, s := range sums {
		if s.Recipe != st.Recipe {
			continue
		}
		if s.GPUTime != nil {
			gpuh = s.GPUTime.Total / 3600
		}
		r := summary.Regime{Nights: st.Regime.Nights, Known: st.Regime.Known, HigherIsBetter: st.Regime.HigherIsBetter, FloorPct: st.Regime.FloorPct}
		probe, judgeErr = gate.JudgeProbe(r, s, commit, st.Subject, st.Metric)
	}
	switch {
	case errors.Is(judgeErr, gate.ErrInconclusive):
		why := strings.TrimPrefix(judgeErr.Error(), gate.ErrInconclusive.Error()+": ")
		if st, err = st.Inconclusive(commit, b.build, why, gpuh); err != nil {
			return err
		}
		fmt.Fprintf(out, "runner: bisect %s: vLLM %s: inconclusive: %s\n", st.Recipe, commit, why)
	case judgeErr != nil:
		return judgeErr
	default:
		if st, err = st.Record(commit, b.build, probe.Value, probe.Bad, gpuh); err != nil {
			return err
		}
		fmt.Fprintf(out, "runner: bisect %s: vLLM %s measured %s: %s (%s)\n", st.Recipe, commit, numfmt.Sig(probe.Value, 4), map[bool]string{true: "bad", false: "good"}[probe.Bad], probe.Why)
	}
	switch {
	case st.Done():
		fmt.Fprintf(out, "runner: bisect %s: the first bad vLLM commit is %s\n", st.Recipe, st.FirstBad())
	case st.Stopped != "":
		fmt.Fprintf(out, "runner: bisect %s stops: %s\n", st.Recipe, st.Stopped)
	default:
		nb, next, err := bisect.Trigger(ctx, b.client, st, b.branch)
		if errors.Is(err, bisect.ErrBudget) {
			st.Stopped = err.Error()
			fmt.Fprintf(out, "runner: bisect %s stops: %v\n", st.Recipe, err)
			break
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "runner: bisect %s: build #%d tests vLLM %s\n", st.Recipe, nb.Number, next)
	}
	return bisect.Announce(ctx, b.client, st, b.build)
}

// buildNumber is this build's number, 0 when unknown.
func buildNumber(getenv func(string) string) int {
	n, _ := strconv.Atoi(getenv("BUILDKITE_BUILD_NUMBER"))
	return n
}

// wantsBisect says whether a kept regression can start a bisect.
func wantsBisect(build gate.Build) bool {
	for _, c := range build.Bisect {
		if c.Summary.GPUTime != nil && c.Summary.GPUTime.BisectBudget > 0 {
			return true
		}
	}
	return false
}

// bisector is the API client of this pipeline, with the token the
// history step uses, and the registry with the docker config's
// credentials.
func (c Config) bisector(getenv func(string) string, api func() (*bkapi.Client, error)) (bisector, error) {
	if c.bisect != nil {
		return *c.bisect, nil
	}
	client, err := api()
	if err != nil {
		return bisector{}, err
	}
	return bisector{client: client, branch: getenv("BUILDKITE_BRANCH"), build: buildNumber(getenv),
		registry: &oci.Client{UserAgent: "benchkite-runner"}}, nil
}
