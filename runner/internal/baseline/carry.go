package baseline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// VerifySample is how many carried nights the history step fetches again
// from the API and compares with what it carries.
const VerifySample = 3

// Prepare makes f ready for many recipes' lookups in one build: it lists
// the scheduled builds once, for the deepest lookup of maxNights, and
// starts from the previous build's history (its HistoryArtifact) so that
// only nights since then cost API calls. A sample of the carried nights
// is fetched again and compared; a mismatch drops the carried history
// (everything is fetched afresh) and says so. Without a previous history
// it still lists once; its absence is only logged.
func (f Fetcher) Prepare(ctx context.Context, maxNights int, log io.Writer) (Fetcher, error) {
	if f.API == nil {
		return f, fmt.Errorf("%w: no Buildkite API client (is an API token configured?): %w", ErrNoBaseline, bkapi.ErrNoToken)
	}
	want := f.Lookback
	if want <= 0 {
		want = maxNights + DefaultLookbackSlack
	}
	if f.CurrentBuild > 0 {
		want++
	}
	builds, err := f.API.ListScheduledBuilds(ctx, f.Branch, want)
	if err != nil {
		return f, fmt.Errorf("%w: %w", ErrNoBaseline, err)
	}
	f.Builds = builds
	prev, from, err := f.previous(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(log, "history: fetching every night afresh: %v\n", err)
		return f, nil
	case prev == nil:
		fmt.Fprintln(log, "history: no earlier build's history to start from; fetching every night")
		return f, nil
	}
	f.Prior = map[string]map[int]Night{}
	carried := 0
	for name, fr := range prev.Recipes {
		m := map[int]Night{}
		for _, n := range fr.Nights {
			if n.JobID == "" || summary.CheckNumbers([]byte(n.Summary)) != nil {
				continue // fetched again, and refused there with the reason
			}
			m[n.BuildNumber] = Night{BuildNumber: n.BuildNumber, BuildURL: n.BuildURL, CreatedAt: n.CreatedAt, Commit: n.Commit, JobID: n.JobID, Summary: []byte(n.Summary), Outcomes: n.Outcomes}
			carried++
		}
		f.Prior[name] = m
	}
	if bad := f.verify(ctx); bad != "" {
		fmt.Fprintf(log, "history: +++ build %d's history does not match the API (%s); fetching every night afresh\n", from, bad)
		f.Prior = nil
		return f, nil
	}
	fmt.Fprintf(log, "history: starting from build %d's history (%d nights of %d recipes; %d checked against the API)\n", from, carried, len(prev.Recipes), min(VerifySample, carried))
	return f, nil
}

// previous downloads the history of the newest earlier build whose
// history step passed.
func (f Fetcher) previous(ctx context.Context) (*File, int, error) {
	for _, b := range f.Builds {
		if f.CurrentBuild > 0 && b.Number >= f.CurrentBuild {
			continue
		}
		job, ok := b.Job(contract.HistoryStepKey)
		if !ok || job.State != jobPassed {
			continue
		}
		arts, err := f.API.ListJobArtifacts(ctx, b.Number, job.ID)
		if err != nil {
			return nil, b.Number, fmt.Errorf("build %d's history: %w", b.Number, err)
		}
		for _, a := range arts {
			if a.Path != contract.HistoryArtifact || a.State != bkapi.ArtifactFinished {
				continue
			}
			data, err := f.API.DownloadArtifact(ctx, a)
			if err != nil {
				return nil, b.Number, fmt.Errorf("build %d's history: %w", b.Number, err)
			}
			var file File
			if err := json.Unmarshal(data, &file); err != nil || file.Version != FileVersion {
				return nil, b.Number, fmt.Errorf("build %d's %s is not a version %d history file", b.Number, a.Path, FileVersion)
			}
			return &file, b.Number, nil
		}
		return nil, b.Number, fmt.Errorf("build %d's history step uploaded no %s", b.Number, contract.HistoryArtifact)
	}
	return nil, 0, nil
}

// verify fetches up to VerifySample carried nights again, spread over
// the recipes, and returns what differs, or "".
func (f Fetcher) verify(ctx context.Context) string {
	type pick struct {
		recipe string
		night  Night
	}
	var all []pick
	for name, m := range f.Prior {
		for _, n := range m {
			all = append(all, pick{name, n})
		}
	}
	if len(all) == 0 {
		return ""
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].recipe != all[j].recipe {
			return all[i].recipe < all[j].recipe
		}
		return all[i].night.BuildNumber > all[j].night.BuildNumber
	})
	k := min(VerifySample, len(all))
	for i := range k {
		p := all[i*len(all)/k]
		data, reason, detail, err := f.summary(ctx, p.night.BuildNumber, p.night.JobID, p.recipe)
		switch {
		case err != nil:
			return fmt.Sprintf("%s #%d: %v", p.recipe, p.night.BuildNumber, err)
		case reason != "":
			return fmt.Sprintf("%s #%d: %s: %s", p.recipe, p.night.BuildNumber, reason, detail)
		case !bytes.Equal(compact(data), compact(p.night.Summary)):
			return fmt.Sprintf("%s #%d: the summary differs", p.recipe, p.night.BuildNumber)
		}
	}
	return ""
}

// compact is JSON without insignificant space, as the history file
// re-indents summaries it embeds.
func compact(b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		return b
	}
	return out.Bytes()
}
