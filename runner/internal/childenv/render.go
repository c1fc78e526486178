package childenv

import (
	"regexp"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/proc"
)

// userinfo matches the user:password@ part of a URL.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s,]+@`)

// Render returns env for printing (`runner plan`, logs): the values of
// secret variables (proc.IsSecretName, and the names in secret) become
// proc.Masked, and so do credentials inside URLs
// (PIP_INDEX_URL=https://user:pass@host/, proxies).
func Render(env []string, secret ...string) []string {
	out := proc.MaskEnv(env, secret...)
	for i, kv := range out {
		name, value, ok := strings.Cut(kv, "=")
		if ok && strings.Contains(value, "@") {
			out[i] = name + "=" + userinfo.ReplaceAllString(value, "${1}"+proc.Masked+"@")
		}
	}
	return out
}
