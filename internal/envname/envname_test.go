package envname

import (
	"errors"
	"testing"
)

func TestCheckRecipe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ok   bool
	}{
		{"VLLM_ATTENTION_BACKEND", true},
		{"HF_HOME", true},
		{"HF_HUB_OFFLINE", true},
		{"NCCL_DEBUG", true},
		{"_X", true},
		{"path", true}, // names are case-sensitive: this is not PATH
		{"PATH", false},
		{"LD_PRELOAD", false},
		{"LD_LIBRARY_PATH", false},
		{"LD_AUDIT", false},
		{"LD_BIND_NOW", false},
		{"BASH_ENV", false},
		{"PYTHONPATH", false},
		{"PYTHONHOME", false},
		{"PYTHONUSERBASE", false},
		{"PYTHONSTARTUP", false},
		{"BUILDKITE_API_TOKEN", false},
		{"BENCHKITE_TOOLS", false},
		{"HF_ENDPOINT", false},
		{"HF_INFERENCE_ENDPOINT", false},
		{"HUGGINGFACE_CO_STAGING", false},
		{"HTTPS_PROXY", false},
		{"https_proxy", false},
		{"REQUESTS_CA_BUNDLE", false},
		{"SSL_CERT_FILE", false},
		{"", false},
		{"1BAD", false},
		{"A=B", false},
		{"A\x00", false},
		{"A-B", false},
	}
	for _, tt := range tests {
		err := CheckRecipe(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("CheckRecipe(%q) = %v, want ok %t", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrForbidden) {
			t.Errorf("CheckRecipe(%q) = %v, want errors.Is ErrForbidden", tt.name, err)
		}
		if (Reason(tt.name) == "") != tt.ok {
			t.Errorf("Reason(%q) = %q, want empty %t", tt.name, Reason(tt.name), tt.ok)
		}
	}
}
