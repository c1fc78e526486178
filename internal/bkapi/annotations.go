package bkapi

import (
	"context"
	"fmt"
	"strconv"
)

// Annotate adds or replaces the annotation of context on another build of
// the pipeline: a job can annotate only its own build with the agent, and
// a bisect reports its result on the build that found the regression.
// It is not retried after a failure that may have reached the server.
func (c *Client) Annotate(ctx context.Context, buildNumber int, context_, style, body string) error {
	what := fmt.Sprintf("annotate build #%d of %s/%s", buildNumber, c.cfg.Org, c.cfg.Pipeline)
	return c.do(ctx, what, false, func(api *rest) error {
		return api.post(api.pipelinePath("builds", strconv.Itoa(buildNumber), "annotations"),
			annotationJSON{Body: body, Context: context_, Style: style}, nil)
	})
}
