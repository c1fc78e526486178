package baseline

import (
	"context"
	"strconv"

	"github.com/benchkite/benchkite/internal/bkapi"
)

// APIConfig says where the Buildkite API baselines come from.
type APIConfig struct {
	URL         string // REST API base
	TokenEnv    string // env var holding the API token
	TokenSecret string // Buildkite secret holding it when the env var is unset
	Branch      string // branch whose scheduled builds are baselines
}

// APISource builds the Buildkite API baseline source lazily, with the
// client api builds (buildkite.Door.API): a recipe without baseline gates
// never needs a token.
func APISource(c APIConfig, api func(ctx context.Context, url, tokenEnv, tokenSecret string) (*bkapi.Client, error), getenv func(string) string) func(ctx context.Context) (Source, error) {
	return func(ctx context.Context) (Source, error) {
		client, err := api(ctx, c.URL, c.TokenEnv, c.TokenSecret)
		if err != nil {
			return nil, err
		}
		current, _ := strconv.Atoi(getenv("BUILDKITE_BUILD_NUMBER"))
		return Fetcher{API: client, Branch: c.Branch, CurrentBuild: current}, nil
	}
}
