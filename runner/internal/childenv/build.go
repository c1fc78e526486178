package childenv

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/benchkite/benchkite/internal/envname"
	"github.com/benchkite/benchkite/runner/internal/proc"
)

// Var is one environment variable.
type Var struct {
	Name  string
	Value string
}

// Options are the sources of a child's environment.
type Options struct {
	// Environ is the job's environment in NAME=value form (os.Environ()).
	// Only what the role allows is taken from it.
	Environ []string
	// Recipe is the recipe's env, in file order. It goes on top of
	// Environ and must pass CheckRecipe. Give it to the roles that run
	// the model (Server); it is not filtered by role.
	Recipe []Var
	// Runner is what the runner sets itself (VLLM_ENGINE_READY_TIMEOUT_S,
	// the tools' PATH, OPENAI_BASE_URL, ...). It goes on top of
	// everything and may set any name except a token no child may get.
	Runner []Var
	// Deny names more variables no child may get: where the runner reads
	// its own tokens from when they are configurable (--api-token-env).
	Deny []string
	// Pass names variables of Environ every role gets as they are, for
	// settings a custom image needs that no role knows (the runner's
	// --pass-env). Secret-looking names and tokens are refused by
	// CheckPass before they get here, and skipped here too.
	Pass []string
}

// ErrForbidden is wrapped by the errors of Build and CheckRecipe about a
// variable that may not be set.
var ErrForbidden = envname.ErrForbidden

// Build returns the complete environment of a child of role r, sorted by
// name, one entry per name.
func Build(r Role, o Options) ([]string, error) {
	ru, ok := rules[r]
	if !ok {
		return nil, fmt.Errorf("build environment: unknown role %v", r)
	}
	env := map[string]string{}
	for _, kv := range o.Environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if (ru.allows(name) || passes(name, o.Pass)) && !denied(name, o.Deny) {
			env[name] = value // the last one wins, as with getenv
		}
	}
	var errs []error
	for _, v := range o.Recipe {
		if err := CheckRecipe(v.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		env[v.Name] = v.Value
	}
	for _, v := range o.Runner {
		if err := checkRunner(r, v.Name, o.Deny); err != nil {
			errs = append(errs, err)
			continue
		}
		env[v.Name] = v.Value
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("environment of %v: %w", r, err)
	}
	if ru.loopback {
		addLoopbackNoProxy(env)
	}
	out := make([]string, 0, len(env))
	for name, value := range env {
		out = append(out, name+"="+value)
	}
	sort.Strings(out)
	return out, nil
}

// allows says whether the role takes name from the job's environment.
func (ru rule) allows(name string) bool {
	if slices.Contains(never, name) {
		return false
	}
	if slices.Contains(hfTokens, name) {
		return ru.hfToken
	}
	if !slices.ContainsFunc(ru.sets, func(s set) bool { return s.has(name) }) {
		return false
	}
	if !proc.IsSecretName(name) {
		return true
	}
	return slices.ContainsFunc(ru.secretSets, func(s set) bool { return s.has(name) })
}

func passes(name string, pass []string) bool {
	return slices.Contains(pass, name) && !proc.IsSecretName(name) && !slices.Contains(hfTokens, name) && name != agentToken
}

// CheckPass says whether name may be passed to every child: no token and
// nothing secret-looking, since every child includes code from the model's
// repository.
func CheckPass(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if slices.Contains(never, name) || slices.Contains(hfTokens, name) || name == agentToken || proc.IsSecretName(name) {
		return fmt.Errorf("%s: %w to every child: it looks like a secret", name, ErrForbidden)
	}
	return nil
}

func denied(name string, deny []string) bool {
	return slices.Contains(never, name) || slices.Contains(deny, name)
}

// checkRunner refuses, even from the runner, a token no child may get,
// and the agent's token to any child but buildkite-agent.
func checkRunner(r Role, name string, deny []string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if denied(name, deny) || (name == agentToken && r != Agent) {
		return fmt.Errorf("%s: %w: no %v process may hold this token", name, ErrForbidden, r)
	}
	return nil
}

func checkName(name string) error {
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return fmt.Errorf("%q: %w: not a variable name", name, ErrForbidden)
	}
	return nil
}

// CheckRecipe says whether a recipe may set the variable name, by the rule
// the recipe loader applies too (internal/envname), so that a recipe lint
// accepts is never refused here.
func CheckRecipe(name string) error { return envname.CheckRecipe(name) }

var proxyNames = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// loopbackHosts are what a child calls the local server by.
var loopbackHosts = []string{"127.0.0.1", "localhost"}

func addLoopbackNoProxy(env map[string]string) {
	if !slices.ContainsFunc(proxyNames, func(n string) bool { return env[n] != "" }) {
		return
	}
	for _, name := range []string{"NO_PROXY", "no_proxy"} {
		hosts := splitList(env[name])
		if slices.Contains(hosts, "*") {
			continue
		}
		for _, h := range loopbackHosts {
			if !slices.Contains(hosts, h) {
				hosts = append(hosts, h)
			}
		}
		env[name] = strings.Join(hosts, ",")
	}
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
