package main

import (
	"errors"
	"fmt"
	"strings"
)

var secretGetCommand = command{
	valueFlags: []string{"format", "job"},
	boolFlags:  []string{"skip-redaction"},
	run:        secretGet,
}

// secretGet prints FAKE_AGENT_SECRET_<KEY> (keys are case-insensitive) as
// the bare value, the agent's default format for one key.
func secretGet(a *agent, f flags, _ string) error {
	if len(f.args) == 0 {
		return errors.New("at least one secret key is required")
	}
	if len(f.args) > 1 {
		return errUnsupported("secret get with several keys")
	}
	if format := f.value("format", a.getenv("BUILDKITE_AGENT_SECRET_GET_FORMAT")); format != "" && format != "default" {
		return errUnsupported("secret get --format " + format)
	}
	key := f.args[0]
	v := a.getenv(envSecretPfx + strings.ToUpper(key))
	if v == "" {
		return fmt.Errorf("failed to get secret %q: secret not found", key)
	}
	fmt.Fprint(a.stdout, v)
	return nil
}
