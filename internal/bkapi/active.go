package bkapi

import (
	"context"
	"fmt"

	"github.com/buildkite/go-buildkite/v3/buildkite"
)

// ActiveBuilds lists the pipeline's scheduled and running builds, newest
// first, up to one page: a bisect asks it whether another bisect of the
// same recipe is under way.
func (c *Client) ActiveBuilds(ctx context.Context) ([]Build, error) {
	opt := &buildkite.BuildsListOptions{
		State:       []string{"scheduled", "running"},
		ListOptions: buildkite.ListOptions{Page: 1, PerPage: perPage},
	}
	var builds []buildkite.Build
	what := fmt.Sprintf("list active builds of %s/%s", c.cfg.Org, c.cfg.Pipeline)
	err := c.do(ctx, what, true, func(bk *buildkite.Client) error {
		bs, _, err := bk.Builds.ListByPipeline(c.cfg.Org, c.cfg.Pipeline, opt)
		builds = bs
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Build, 0, len(builds))
	for _, b := range builds {
		out = append(out, buildFrom(b))
	}
	return out, nil
}
