// Package envname is the one rule for which environment variables a recipe
// may set. The recipe loader applies it to report a bad name with its file
// and line, and the runner applies it again before a child starts, so a
// recipe that lint accepts is one the runner runs.
package envname

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ErrForbidden is wrapped by CheckRecipe's errors.
var ErrForbidden = errors.New("variable may not be set")

// nameRE is what shells and env(1) take as a variable name.
var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// TokenRedirects are variables that change which host the Hugging Face
// token is sent to (huggingface_hub/constants.py: HF_ENDPOINT,
// HF_INFERENCE_ENDPOINT, HUGGINGFACE_CO_STAGING), or let another host read
// it on the way: a proxy, or the certificates a client trusts.
var TokenRedirects = []string{
	"HF_ENDPOINT", "HF_INFERENCE_ENDPOINT", "HUGGINGFACE_CO_STAGING",
	"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
}

// Reason says why a recipe may not set name, or "" when it may. A recipe
// names what to benchmark: it may not pick which programs, libraries or
// Python code run, set runner or agent settings, or send the Hub token
// elsewhere.
func Reason(name string) string {
	switch {
	case !nameRE.MatchString(name):
		return "not a variable name: use letters, digits and '_', not starting with a digit"
	case name == "PATH":
		return "the runner decides which programs run"
	case strings.HasPrefix(name, "LD_"):
		return "the dynamic loader's settings change which libraries are loaded"
	case name == "BASH_ENV":
		return "bash runs the file it names before any script"
	case name == "PYTHONPATH", name == "PYTHONHOME", name == "PYTHONUSERBASE", name == "PYTHONSTARTUP":
		return "it changes which Python code is imported"
	case strings.HasPrefix(name, "BUILDKITE_"), strings.HasPrefix(name, "BENCHKITE_"):
		return "it is a Buildkite or runner setting"
	case slices.Contains(TokenRedirects, name):
		return "it changes where the Hugging Face token is sent, or who can read it on the way"
	}
	return ""
}

// CheckRecipe returns an error wrapping ErrForbidden when a recipe may not
// set name.
func CheckRecipe(name string) error {
	if why := Reason(name); why != "" {
		return fmt.Errorf("%s: %w by a recipe: %s", Quote(name), ErrForbidden, why)
	}
	return nil
}

// Quote writes a name for a message: as it is when it is a variable name,
// quoted when it is not (it may hold anything).
func Quote(name string) string {
	if nameRE.MatchString(name) {
		return name
	}
	return strconv.Quote(name)
}

// BuildArgReason says why a recipe's vllm.build may not pass a build
// argument called name, or "" when it may: the Buildkite and runner
// settings include the job's tokens (the agent's, the REST API's, the
// ingest's), which the runner gives no docker build, from the job's
// environment or not.
func BuildArgReason(name string) string {
	if strings.HasPrefix(name, "BUILDKITE_") || strings.HasPrefix(name, "BENCHKITE_") {
		return "it is a Buildkite or runner setting, whose tokens the runner passes to no build"
	}
	return ""
}
