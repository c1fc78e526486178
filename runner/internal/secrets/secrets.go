// Package secrets keeps the job's tokens out of the runner's own process
// image. Any process of the runner's uid can read /proc/<runner>/environ,
// which holds the environment the runner was started with for as long as
// it runs, whatever the runner later gives its children: the server runs
// model code (--trust-remote-code) and would find the agent, API and
// ingest tokens there. So at start the runner reads the secrets into
// memory, writes them into a pipe, and re-executes itself with an
// environment without them, passing the pipe's read end; the new image
// reads them back and marks itself non-dumpable, which keeps other
// processes of its uid from reading its memory or attaching to it. The
// secrets reach a child only through the environment its role is given
// (runner/internal/childenv) when it is started.
package secrets

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/proc"
)

// FDEnv names the inherited descriptor the secrets come on, in the
// re-executed runner's environment.
const FDEnv = "BENCHKITE_SECRETS_FD"

// maxSecrets bounds what goes through the pipe: it is written in full
// before the exec, so it must fit in the pipe's buffer (64 KiB on Linux).
const maxSecrets = 60 << 10

// Split separates environ into the variables without secrets and the
// secret ones (proc.IsSecretName), by name.
func Split(environ []string) (clean []string, secret map[string]string) {
	secret = map[string]string{}
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		if proc.IsSecretName(name) && value != "" {
			secret[name] = value
			continue
		}
		if name == FDEnv {
			continue
		}
		clean = append(clean, kv)
	}
	return clean, secret
}

// Env is the runner's view of its environment after Receive: the clean
// process environment with the secrets put back, in memory only.
type Env struct {
	environ []string
	secret  map[string]string
}

// Getenv is os.Getenv over the environment with its secrets.
func (e Env) Getenv(name string) string {
	if v, ok := e.secret[name]; ok {
		return v
	}
	for i := len(e.environ) - 1; i >= 0; i-- {
		if n, v, _ := strings.Cut(e.environ[i], "="); n == name {
			return v
		}
	}
	return ""
}

// Environ is os.Environ over the environment with its secrets.
func (e Env) Environ() []string {
	out := slices.Clone(e.environ)
	names := make([]string, 0, len(e.secret))
	for n := range e.secret {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		out = append(out, n+"="+e.secret[n])
	}
	return out
}

// encode writes the secrets for the pipe.
func encode(secret map[string]string) ([]byte, error) {
	data, err := json.Marshal(secret)
	if err != nil {
		return nil, err
	}
	if len(data) > maxSecrets {
		return nil, fmt.Errorf("the secrets in the environment take %d bytes, more than %d", len(data), maxSecrets)
	}
	return data, nil
}

// receive reads the secrets from r.
func receive(r io.Reader) (map[string]string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSecrets+1))
	if err != nil {
		return nil, err
	}
	secret := map[string]string{}
	if err := json.Unmarshal(data, &secret); err != nil {
		return nil, fmt.Errorf("secrets from the re-executing runner: %w", err)
	}
	return secret, nil
}

// fdFrom parses FDEnv's value.
func fdFrom(v string) (int, error) {
	fd, err := strconv.Atoi(v)
	if err != nil || fd < 3 {
		return 0, fmt.Errorf("%s=%q is not a descriptor number", FDEnv, v)
	}
	return fd, nil
}

// Start is the first thing the runner does. In the re-executed image
// (FDEnv set) it reads the secrets from the pipe, marks the process
// non-dumpable and returns them with the clean environment. Otherwise,
// when environ holds a secret, it re-executes the runner without them and
// does not return unless that fails; with no secret it returns environ
// as it is (still marked non-dumpable).
func Start(argv, environ []string) (Env, error) {
	clean, secret := Split(environ)
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, FDEnv+"="); ok {
			fd, err := fdFrom(v)
			if err != nil || !isPipe(fd) {
				// Not the pipe a re-executing runner left open: the
				// variable came with the job's environment. The runner
				// starts as it would without it (Split dropped it).
				continue
			}
			if err := nonDumpable(); err != nil {
				return Env{}, err
			}
			f := os.NewFile(uintptr(fd), "secrets")
			defer f.Close()
			got, err := receive(f)
			if err != nil {
				return Env{}, err
			}
			// Secrets set in the clean environment (none should be) lose
			// to the ones passed.
			for k, v := range secret {
				if _, ok := got[k]; !ok {
					got[k] = v
				}
			}
			return Env{environ: clean, secret: got}, nil
		}
	}
	if len(secret) == 0 || !reexecs {
		return Env{environ: clean, secret: secret}, nonDumpable()
	}
	data, err := encode(secret)
	if err != nil {
		return Env{}, err
	}
	return Env{}, reexec(argv, clean, data)
}
