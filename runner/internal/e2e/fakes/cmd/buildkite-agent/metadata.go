package main

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

var metaDataSetCommand = command{
	valueFlags: []string{"job", "redacted-vars"},
	readsStdin: func(f flags) bool { return len(f.args) == 1 },
	run: func(a *agent, f flags, stdin string) error {
		if len(f.args) == 0 {
			return errors.New("missing key: buildkite-agent meta-data set <key> [value]")
		}
		key, value := f.args[0], stdin
		if len(f.args) > 1 {
			value = f.args[1]
		}
		if strings.TrimSpace(key) == "" || strings.TrimSpace(value) == "" {
			return errors.New("key and value must not be empty or only whitespace")
		}
		dir := a.getenv(envMetadata)
		if dir == "" {
			return nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("set meta-data: %w", err)
		}
		return os.WriteFile(filepath.Join(dir, url.PathEscape(key)), []byte(value), 0o644)
	},
}

var metaDataGetCommand = command{
	valueFlags: []string{"default", "job", "build"},
	run: func(a *agent, f flags, _ string) error {
		if len(f.args) == 0 {
			return errors.New("missing key: buildkite-agent meta-data get <key>")
		}
		v, ok := a.metaData(f.args[0])
		if !ok {
			def, hasDefault := f.values["default"]
			if !hasDefault {
				return fmt.Errorf("failed to get meta-data %q: 404 Not Found", f.args[0])
			}
			v = def
		}
		fmt.Fprint(a.stdout, v) // the agent prints no trailing newline
		return nil
	},
}

var metaDataExistsCommand = command{
	valueFlags: []string{"job", "build"},
	run: func(a *agent, f flags, _ string) error {
		if len(f.args) == 0 {
			return errors.New("missing key: buildkite-agent meta-data exists <key>")
		}
		if _, ok := a.metaData(f.args[0]); !ok {
			return &exitError{code: 100}
		}
		return nil
	},
}

var metaDataKeysCommand = command{
	valueFlags: []string{"job", "build"},
	run: func(a *agent, _ flags, _ string) error {
		dir := a.getenv(envMetadata)
		if dir == "" {
			return nil
		}
		entries, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("list meta-data: %w", err)
		}
		var keys []string
		for _, e := range entries {
			if k, err := url.PathUnescape(e.Name()); err == nil {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintln(a.stdout, k)
		}
		return nil
	},
}

func (a *agent) metaData(key string) (string, bool) {
	dir := a.getenv(envMetadata)
	if dir == "" {
		return "", false
	}
	data, err := os.ReadFile(filepath.Join(dir, url.PathEscape(key)))
	if err != nil {
		return "", false
	}
	return string(data), true
}
