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

// APISource builds the Buildkite API baseline source lazily: a recipe
// without baseline gates never needs a token.
func APISource(c APIConfig, getenv func(string) string, secret func(ctx context.Context, name string) (string, error)) func(ctx context.Context) (Source, error) {
	return func(ctx context.Context) (Source, error) {
		token, err := bkapi.TokenFromEnvOrSecret(ctx, getenv, secret, c.TokenEnv, c.TokenSecret)
		if err != nil {
			return nil, err
		}
		client, err := bkapi.New(bkapi.Config{BaseURL: c.URL, Token: token,
			Org: getenv("BUILDKITE_ORGANIZATION_SLUG"), Pipeline: getenv("BUILDKITE_PIPELINE_SLUG")})
		if err != nil {
			return nil, err
		}
		current, _ := strconv.Atoi(getenv("BUILDKITE_BUILD_NUMBER"))
		return Fetcher{API: client, Branch: c.Branch, CurrentBuild: current}, nil
	}
}
