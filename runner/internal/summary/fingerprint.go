package summary

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"
)

// Fingerprint says what makes two runs' numbers comparable: a changed
// serve flag or prompt length makes last week's throughput a different
// series, not a regression. Hash is a sha256 over the canonical JSON of
// Parts (struct order, sorted map keys); Parts keep it readable.
//
// The image digest is recorded (Summary.ImageDigest) but not hashed: the
// nightly image changes every night, and finding what a new vLLM build
// did to the numbers is the point of comparing nights. The image's
// repository is hashed: a CUDA and a ROCm build are different series.
type Fingerprint struct {
	Hash  string           `json:"sha256"`
	Parts FingerprintParts `json:"parts"`
}

// FingerprintParts are the things hashed.
type FingerprintParts struct {
	Model string `json:"model"`
	// ServeArgv is the `vllm serve` argv without the port.
	ServeArgv []string `json:"serve_argv"`
	// ServeEnv are the server's NAME=value settings, sorted.
	ServeEnv []string `json:"serve_env"`
	// Bench is one line per bench run: its shape, sampling and flags.
	Bench []string `json:"bench"`
	// Accuracy is one line per lm_eval task: few-shot and model args.
	Accuracy  []string          `json:"accuracy"`
	GPU       string            `json:"gpu"`
	NumGPUs   int               `json:"num_gpus"`
	ImageRepo string            `json:"image_repo"`
	Tools     map[string]string `json:"tools,omitempty"`
}

// NewFingerprint hashes p.
func NewFingerprint(p FingerprintParts) *Fingerprint {
	p.ServeEnv = slices.Sorted(slices.Values(p.ServeEnv))
	b, err := json.Marshal(p)
	if err != nil {
		panic("summary: fingerprint parts do not encode: " + err.Error()) // strings, ints and a string map always do
	}
	sum := sha256.Sum256(b)
	return &Fingerprint{Hash: hex.EncodeToString(sum[:]), Parts: p}
}

// Changed names the parts in which f and g differ, in words for a
// person ("serve args", "bench config"); none when the hashes agree.
func (f *Fingerprint) Changed(g *Fingerprint) []string {
	if f == nil || g == nil || f.Hash == g.Hash {
		return nil
	}
	a, b := f.Parts, g.Parts
	var out []string
	add := func(diff bool, what string) {
		if diff {
			out = append(out, what)
		}
	}
	add(a.Model != b.Model, "model")
	add(!slices.Equal(a.ServeArgv, b.ServeArgv), "serve args")
	add(!slices.Equal(a.ServeEnv, b.ServeEnv), "serve env")
	add(!slices.Equal(a.Bench, b.Bench), "bench config")
	add(!slices.Equal(a.Accuracy, b.Accuracy), "accuracy tasks")
	add(a.GPU != b.GPU || a.NumGPUs != b.NumGPUs, "GPUs")
	add(a.ImageRepo != b.ImageRepo, "image repository")
	add(!maps.Equal(a.Tools, b.Tools), "tool versions")
	if len(out) == 0 {
		out = append(out, "fingerprint") // a hash of another encoding
	}
	return out
}
