package proc

import "strings"

// Masked replaces a secret value in printed output.
const Masked = "***"

// MaskEnv returns a copy of env, in NAME=value form, with the values of
// secret variables replaced by Masked, for printing. A variable is secret
// when IsSecretName says so or when its name is one of secretNames. Empty
// values stay empty: that a token is unset is worth seeing.
func MaskEnv(env []string, secretNames ...string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if ok && value != "" && (IsSecretName(name) || containsFold(secretNames, name)) {
			kv = name + "=" + Masked
		}
		out[i] = kv
	}
	return out
}

// notSecret are names that match a secret pattern but hold an
// identifier that logs and plans must show: Buildkite's step and group
// keys.
var notSecret = map[string]bool{
	"BUILDKITE_STEP_KEY":  true,
	"BUILDKITE_GROUP_KEY": true,
}

// IsSecretName reports whether an environment variable of that name holds
// a secret (case-insensitive): the Hugging Face tokens, names ending in
// _TOKEN, _SECRET, _PASSWORD or _KEY, and names containing API_KEY, APIKEY
// or PASSWORD; except the exact names in notSecret.
func IsSecretName(name string) bool {
	n := strings.ToUpper(name)
	switch {
	case notSecret[n]:
		return false
	case n == "HF_TOKEN", n == "HUGGING_FACE_HUB_TOKEN":
		return true
	case strings.HasSuffix(n, "_TOKEN"), strings.HasSuffix(n, "_SECRET"), strings.HasSuffix(n, "_PASSWORD"), strings.HasSuffix(n, "_KEY"):
		return true
	case strings.Contains(n, "API_KEY"), strings.Contains(n, "APIKEY"), strings.Contains(n, "PASSWORD"):
		return true
	}
	return false
}

func containsFold(names []string, name string) bool {
	for _, n := range names {
		if strings.EqualFold(n, name) {
			return true
		}
	}
	return false
}
