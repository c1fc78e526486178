package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

var secretGetCommand = command{
	valueFlags: []string{"format", "job"},
	boolFlags:  []string{"skip-redaction"},
	run:        secretGet,
}

// secretGet prints FAKE_AGENT_SECRET_<KEY> (keys are case-insensitive);
// one key prints the bare value, several print JSON, --format env prints
// KEY="value" lines.
func secretGet(a *agent, f flags, _ string) error {
	if len(f.args) == 0 {
		return errors.New("at least one secret key is required")
	}
	values := map[string]string{}
	for _, key := range f.args {
		v := a.getenv(envSecretPfx + strings.ToUpper(key))
		if v == "" {
			return fmt.Errorf("failed to get secret %q: secret not found", key)
		}
		values[key] = v
	}
	format := f.value("format", a.getenv("BUILDKITE_AGENT_SECRET_GET_FORMAT"))
	switch {
	case format == "env":
		for _, key := range f.args {
			fmt.Fprintf(a.stdout, "%s=%q\n", key, values[key])
		}
	case format == "json" || len(f.args) > 1:
		data, err := json.Marshal(values)
		if err != nil {
			return err
		}
		fmt.Fprintln(a.stdout, string(data))
	case format == "" || format == "default":
		fmt.Fprint(a.stdout, values[f.args[0]])
	default:
		return fmt.Errorf("invalid format %q: must be default, json or env", format)
	}
	return nil
}
