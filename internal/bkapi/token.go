package bkapi

import (
	"context"
	"fmt"
	"strings"
)

// TokenFromEnvOrSecret finds the API token: the environment variable
// envName wins; otherwise runSecretGet fetches the Buildkite secret
// secretName (the runner passes a function that runs
// `buildkite-agent secret get <name>` through its exec seam). A token that
// cannot be found is ErrNoToken. Errors never contain the token.
func TokenFromEnvOrSecret(
	ctx context.Context,
	env func(string) string,
	runSecretGet func(ctx context.Context, name string) (string, error),
	envName, secretName string,
) (string, error) {
	if env != nil && envName != "" {
		if tok := strings.TrimSpace(env(envName)); tok != "" {
			return tok, nil
		}
	}
	if runSecretGet == nil || secretName == "" {
		return "", fmt.Errorf("%w: %s is not set and no Buildkite secret is configured", ErrNoToken, orUnnamed(envName))
	}
	tok, err := runSecretGet(ctx, secretName)
	tok = strings.TrimSpace(tok) // the agent may end the value with a newline
	if err != nil {
		return "", fmt.Errorf("%w: %s is not set and buildkite-agent secret get %s failed: %w",
			ErrNoToken, orUnnamed(envName), secretName, redactErr(err, tok))
	}
	if tok == "" {
		return "", fmt.Errorf("%w: %s is not set and Buildkite secret %s is empty", ErrNoToken, orUnnamed(envName), secretName)
	}
	return tok, nil
}

func orUnnamed(envName string) string {
	if envName == "" {
		return "the token environment variable"
	}
	return envName
}
