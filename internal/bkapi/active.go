package bkapi

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
)

// ActiveBuilds lists the pipeline's scheduled and running builds, newest
// first, up to one page: a bisect asks it whether another bisect of the
// same recipe is under way.
func (c *Client) ActiveBuilds(ctx context.Context) ([]Build, error) {
	q := url.Values{"state[]": {"scheduled", "running"}, "page": {"1"}, "per_page": {strconv.Itoa(perPage)}}
	var builds []buildJSON
	what := fmt.Sprintf("list active builds of %s/%s", c.cfg.Org, c.cfg.Pipeline)
	err := c.do(ctx, what, true, func(api *rest) error {
		builds = nil
		_, err := api.get(api.pipelinePath("builds"), q, &builds)
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
