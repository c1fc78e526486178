package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

var secretGetCommand = command{
	valueFlags: []string{"format", "job"},
	boolFlags:  []string{"skip-redaction"},
	run:        secretGet,
}

// secretGet prints the secret from the FAKE_AGENT_SECRETS file (a JSON
// object of key to value; keys are case-insensitive) as the bare value,
// the agent's default format for one key. The values live in a file, not
// in the environment: the runner gives no child a secret-looking variable.
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
	v := ""
	if path := a.getenv(envSecrets); path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", envSecrets, err)
		}
		var secrets map[string]string
		if err := json.Unmarshal(data, &secrets); err != nil {
			return fmt.Errorf("read %s: %w", envSecrets, err)
		}
		for k, s := range secrets {
			if strings.EqualFold(k, key) {
				v = s
			}
		}
	}
	if v == "" {
		return fmt.Errorf("failed to get secret %q: secret not found", key)
	}
	fmt.Fprint(a.stdout, v)
	return nil
}
