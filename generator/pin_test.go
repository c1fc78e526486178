package main

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/oci/ocitest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// loopbackRegistry is go-containerregistry's in-process registry on
// loopback, counting manifest GETs per path.
type loopbackRegistry struct {
	*ocitest.Registry
}

func newLoopbackRegistry(t *testing.T) loopbackRegistry {
	t.Helper()
	return loopbackRegistry{ocitest.NewRegistry(t, nil)}
}

// push stores a random image under repo:tag and returns its digest.
func (lr loopbackRegistry) push(t *testing.T, repoTag string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	d := ocitest.Push(t, lr.Host+"/"+repoTag, img)
	lr.ResetGets() // count what the generator asks, not the push
	return d
}

// nightlyAgainst runs the nightly of the shipped recipes with every
// profile's images pulled through the loopback registry.
func nightlyAgainst(t *testing.T, lr loopbackRegistry) result {
	t.Helper()
	env := map[string]string{"BUILDKITE_SOURCE": "schedule", "BENCHKITE_NO_RESOLVE": "0", "BUILDKITE_AGENT_META_DATA_QUEUE": "cpu"}
	for _, gpu := range []string{"MI355X", "MI300X", "H200", "B200"} {
		env[gpu+"_IMAGE_REWRITE"] = "vllm/=" + lr.Host + "/vllm/"
	}
	return runGenerator(t, env, "--workloads", "../testdata/workloads", "--agents", "../agents/profiles.yaml")
}

type pinnedStep struct {
	Key      string            `json:"key"`
	Label    string            `json:"label"`
	Agents   map[string]string `json:"agents"`
	Env      map[string]string `json:"env"`
	Commands []string          `json:"commands"`
	Plugins  json.RawMessage   `json:"plugins"`
}

func stepsOf(t *testing.T, out string) map[string]pinnedStep {
	t.Helper()
	var p struct {
		Steps []pinnedStep `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("pipeline: %v\n%s", err, out)
	}
	m := map[string]pinnedStep{}
	for _, s := range p.Steps {
		m[s.Key] = s
	}
	return m
}

// podImages are every "image" value in a step's plugins.
func podImages(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && k == "image" {
					out = append(out, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	sort.Strings(out)
	return out
}

// The nightly pins every step to the digest the registry holds: the pod
// pulls the rewritten reference by digest, VLLM_IMAGE names the recipe's
// image with that digest, and each image is asked for once.
func TestPipelinePinsImages(t *testing.T) {
	t.Parallel()
	lr := newLoopbackRegistry(t)
	cuda := lr.push(t, "vllm/vllm-openai:nightly")
	rocm := lr.push(t, "vllm/vllm-openai-rocm:nightly")
	got := nightlyAgainst(t, lr)
	if got.code != 0 {
		t.Fatalf("generator = exit %d\nstderr:\n%s", got.code, got.stderr)
	}
	steps := stepsOf(t, got.stdout)
	want := map[string]string{
		"recipe:gpt_oss_120b-b200": "vllm/vllm-openai:nightly@" + cuda,
		"recipe:gpt_oss_120b-h200": "vllm/vllm-openai:nightly@" + cuda,
		"recipe:kimi_k2_5-mi300x":  "vllm/vllm-openai-rocm:nightly@" + rocm,
	}
	for key, image := range want {
		s, ok := steps[key]
		if !ok {
			t.Errorf("no step %s", key)
			continue
		}
		if s.Env["VLLM_IMAGE"] != image {
			t.Errorf("%s VLLM_IMAGE = %q, want %q", key, s.Env["VLLM_IMAGE"], image)
		}
		for _, img := range podImages(t, s.Plugins) {
			if img != lr.Host+"/"+image {
				t.Errorf("%s pod image = %q, want %q", key, img, lr.Host+"/"+image)
			}
		}
	}
	if imgs := podImages(t, steps["recipe:kimi_k2_5-mi300x"].Plugins); len(imgs) == 0 {
		t.Errorf("the MI300X step has no pod image; the test would prove nothing about pods")
	}
	gets := lr.Gets()
	wantGets := map[string]int{"/v2/vllm/vllm-openai/manifests/nightly": 1, "/v2/vllm/vllm-openai-rocm/manifests/nightly": 1}
	if diff := cmp.Diff(gets, wantGets); diff != "" {
		t.Errorf("manifest GETs diff (-got +want):\n%s", diff)
	}
	if strings.Contains(got.stderr, "Images not pinned") {
		t.Errorf("notes say images are not pinned:\n%s", got.stderr)
	}
}

// A tag the registry does not hold turns its recipes into failing CPU
// steps that name the image and the registry's answer; the others run.
func TestPipelineMissingImage(t *testing.T) {
	t.Parallel()
	lr := newLoopbackRegistry(t)
	cuda := lr.push(t, "vllm/vllm-openai:nightly")
	lr.push(t, "vllm/vllm-openai-rocm:yesterday") // the repository exists, the tag does not
	got := nightlyAgainst(t, lr)
	if got.code != 0 {
		t.Fatalf("generator = exit %d\nstderr:\n%s", got.code, got.stderr)
	}
	steps := stepsOf(t, got.stdout)
	s := steps["recipe:kimi_k2_5-mi300x"]
	if s.Agents["queue"] != "cpu" || len(s.Plugins) != 0 || s.Commands[len(s.Commands)-1] != "exit 1" {
		t.Errorf("MI300X step = %+v, want a failing CPU step with no pod", s)
	}
	for _, c := range s.Commands {
		if strings.Contains(c, "runner") {
			t.Errorf("MI300X step runs the runner: %q", c)
		}
	}
	msg := s.Env["BENCHKITE_PROBLEMS"]
	for _, w := range []string{"image " + lr.Host + "/vllm/vllm-openai-rocm:nightly", "not found in registry " + lr.Host, "registry answered manifest unknown", "HTTP 404"} {
		if !strings.Contains(msg, w) {
			t.Errorf("message lacks %q: %q", w, msg)
		}
	}
	if !strings.HasSuffix(s.Label, "kimi_k2_5-mi300x: image not found") {
		t.Errorf("MI300X step label = %q, want it to say the image was not found", s.Label)
	}
	if v := steps["recipe:gpt_oss_120b-h200"].Env["VLLM_IMAGE"]; v != "vllm/vllm-openai:nightly@"+cuda {
		t.Errorf("H200 VLLM_IMAGE = %q; the other recipes must still run pinned", v)
	}
	if !strings.Contains(got.stderr, ":warning: Image not resolved") {
		t.Errorf("notes do not say an image did not resolve:\n%s", got.stderr)
	}
}

// --no-resolve leaves tags and says so loudly in the notes.
func TestPipelineNoResolve(t *testing.T) {
	t.Parallel()
	got := runGenerator(t, map[string]string{"BUILDKITE_SOURCE": "schedule"}, "--workloads", "../testdata/workloads", "--agents", "../agents/profiles.yaml", "--no-resolve")
	if got.code != 0 {
		t.Fatalf("generator = exit %d\nstderr:\n%s", got.code, got.stderr)
	}
	if v := stepsOf(t, got.stdout)["recipe:gpt_oss_120b-h200"].Env["VLLM_IMAGE"]; v != "vllm/vllm-openai:nightly" {
		t.Errorf("VLLM_IMAGE = %q, want the tag", v)
	}
	if !strings.Contains(got.stderr, ":warning: Images not pinned:") {
		t.Errorf("notes do not say images are not pinned:\n%s", got.stderr)
	}
}
