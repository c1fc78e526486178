package bisect

import (
	"context"
	"fmt"
	"regexp"
	"sort"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// nightlyTagRE is a nightly image's tag: nightly-<vLLM commit>. A tag of
// digits only is a date, not a commit.
var (
	nightlyTagRE = regexp.MustCompile(`^nightly-([0-9a-f]{7,40})$`)
	digitsRE     = regexp.MustCompile(`^[0-9]+$`)
)

// Candidates lists the nightly-<sha> images of repo and returns those
// created after the good commit's image up to the bad commit's, oldest
// first, ordered by the images' creation time (the order vLLM's nightly
// builds pushed them in). Both ends must have an image.
func Candidates(ctx context.Context, repo, good, bad string, opts ...remote.Option) ([]Candidate, error) {
	r, err := name.NewRepository(repo)
	if err != nil {
		return nil, fmt.Errorf("bisect: image repository %q: %w", repo, err)
	}
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	tags, err := remote.List(r, opts...)
	if err != nil {
		return nil, fmt.Errorf("bisect: list tags of %s: %w", repo, err)
	}
	var all []Candidate
	for _, tag := range tags {
		m := nightlyTagRE.FindStringSubmatch(tag)
		if m == nil || digitsRE.MatchString(m[1]) {
			continue
		}
		img, err := remote.Image(r.Tag(tag), opts...)
		if err != nil {
			return nil, fmt.Errorf("bisect: read %s:%s: %w", repo, tag, err)
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("bisect: read the config of %s:%s: %w", repo, tag, err)
		}
		all = append(all, Candidate{Commit: m[1], Created: cfg.Created.UTC()})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Created.Before(all[j].Created) })
	lo, hi := -1, -1
	for i, c := range all {
		if sameCommit(c.Commit, good) {
			lo = i
		}
		if sameCommit(c.Commit, bad) {
			hi = i
		}
	}
	switch {
	case lo < 0:
		return nil, fmt.Errorf("bisect: %s has no nightly-<sha> image of the last good commit %s", repo, good)
	case hi < 0:
		return nil, fmt.Errorf("bisect: %s has no nightly-<sha> image of the first bad commit %s", repo, bad)
	case hi <= lo:
		return nil, fmt.Errorf("bisect: the image of the first bad commit %s is not newer than the last good one's %s", bad, good)
	}
	return all[lo+1 : hi+1], nil
}
