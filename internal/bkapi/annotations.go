package bkapi

import (
	"context"
	"fmt"
	"strconv"

	"github.com/buildkite/go-buildkite/v3/buildkite"
)

// Annotate adds or replaces the annotation of context on another build of
// the pipeline: a job can annotate only its own build with the agent, and
// a bisect reports its result on the build that found the regression.
// It is not retried after a failure that may have reached the server.
func (c *Client) Annotate(ctx context.Context, buildNumber int, context_, style, body string) error {
	what := fmt.Sprintf("annotate build #%d of %s/%s", buildNumber, c.cfg.Org, c.cfg.Pipeline)
	return c.do(ctx, what, false, func(bk *buildkite.Client) error {
		_, _, err := bk.Annotations.Create(c.cfg.Org, c.cfg.Pipeline, strconv.Itoa(buildNumber),
			&buildkite.AnnotationCreate{Body: &body, Context: &context_, Style: &style})
		return err
	})
}
