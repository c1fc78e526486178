package bisect

import (
	"context"
	"fmt"
	"regexp"
	"sort"

	"github.com/benchkite/benchkite/internal/oci"
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
// builds pushed them in). Both ends must have an image. A nil client is
// the zero oci.Client (the docker config's credentials).
//
// On Docker Hub the order is the tags' push times, newest first from its
// web API, read until both ends are seen: a few requests and no pull,
// where reading every image's config would cost a pull per nightly tag.
// Elsewhere each nightly image's config is read, within the client's
// request budget (oci.Client.MaxRequests).
func Candidates(ctx context.Context, client *oci.Client, repo, good, bad string) ([]Candidate, error) {
	if client == nil {
		client = &oci.Client{}
	}
	r, err := oci.ParseRepository(repo)
	if err != nil {
		return nil, fmt.Errorf("bisect: image repository %q: %w", repo, err)
	}
	if r.Registry == oci.DockerHub {
		return hubCandidates(ctx, client, r, repo, good, bad)
	}
	tags, err := client.Tags(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("bisect: list tags of %s: %w", repo, err)
	}
	var all []Candidate
	for _, tag := range tags {
		m := nightlyTagRE.FindStringSubmatch(tag)
		if m == nil || digitsRE.MatchString(m[1]) {
			continue
		}
		cfg, err := imageConfig(ctx, client, r.WithTag(tag))
		if err != nil {
			return nil, fmt.Errorf("bisect: read the config of %s:%s: %w", repo, tag, err)
		}
		all = append(all, Candidate{Commit: m[1], Created: cfg.Created.UTC()})
	}
	return between(all, repo, good, bad)
}

// hubCandidates are Candidates by Docker Hub's push times.
func hubCandidates(ctx context.Context, client *oci.Client, r oci.Ref, repo, good, bad string) ([]Candidate, error) {
	var all []Candidate
	sawGood, sawBad := false, false
	_, err := client.HubTags(ctx, r, func(page []oci.TagPush) bool {
		for _, t := range page {
			m := nightlyTagRE.FindStringSubmatch(t.Name)
			if m == nil || digitsRE.MatchString(m[1]) {
				continue
			}
			all = append(all, Candidate{Commit: m[1], Created: t.Pushed})
			sawGood = sawGood || sameCommit(m[1], good)
			sawBad = sawBad || sameCommit(m[1], bad)
		}
		// Listed by push time: once both ends are in, so is every
		// image between them.
		return sawGood && sawBad
	})
	if err != nil {
		return nil, fmt.Errorf("bisect: list tags of %s: %w", repo, err)
	}
	return between(all, repo, good, bad)
}

// between orders all by creation and returns those after good up to bad.
func between(all []Candidate, repo, good, bad string) ([]Candidate, error) {
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

// imageConfig reads the config of the image ref names; of an index's, the
// image a linux/amd64 node runs.
func imageConfig(ctx context.Context, client *oci.Client, ref oci.Ref) (*oci.ConfigFile, error) {
	m, err := client.Manifest(ctx, ref)
	if err != nil {
		return nil, err
	}
	if oci.IsIndex(m.MediaType) {
		idx, err := m.ParseIndex()
		if err != nil {
			return nil, err
		}
		d, ok := oci.PickImage(idx.Manifests)
		if !ok {
			return nil, fmt.Errorf("index %s lists no image", m.Digest)
		}
		if m, err = client.Manifest(ctx, ref.At(d.Digest)); err != nil {
			return nil, err
		}
	}
	im, err := m.ParseImage()
	if err != nil {
		return nil, err
	}
	b, err := client.Blob(ctx, ref.At(im.Config.Digest), oci.MaxConfigBytes)
	if err != nil {
		return nil, err
	}
	return oci.ParseConfig(b)
}
