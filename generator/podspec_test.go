package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/steps"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// clusterFacts is what a pod must carry on each cluster, written from the
// deployment facts (not from the profiles, which they check).
type clusterFacts struct {
	field            string
	resource         string
	runtimeClass     string
	hostNetwork      bool
	pullSecrets      []string
	seccomp          string
	capabilities     []string
	hostPaths        []string
	hfHome           string
	toolsDir         string // BENCHKITE_TOOLS_DIR, inside a host path
	hfCacheEmptyDir  bool
	tokenName, token string
	env              map[string]string
}

var amdFacts = clusterFacts{
	field: "podSpecPatch", resource: "amd.com/gpu",
	pullSecrets: []string{"docker-config"}, seccomp: "Unconfined", capabilities: []string{"IPC_LOCK", "SYS_PTRACE"},
	hfHome: "/root/.cache/huggingface", hfCacheEmptyDir: true, tokenName: "hf-token", token: "TOKEN",
	env: map[string]string{"VLLM_USAGE_SOURCE": "ci-test"},
}

var facts = map[string]clusterFacts{
	"MI355X": amdFacts,
	"MI300X": amdFacts,
	"B200": {
		field: "podSpec", resource: "nvidia.com/gpu", runtimeClass: "nvidia", hostNetwork: true,
		pullSecrets: []string{"k8s-ecr-login-renew-docker-secret"}, capabilities: []string{"IPC_LOCK", "SYS_RESOURCE"},
		hostPaths: []string{"/raid", "/mnt/shared"}, hfHome: "/mnt/shared/hf_cache", toolsDir: "/mnt/shared/benchkite-tools", tokenName: "hf-token-secret", token: "token",
		env: map[string]string{"VLLM_USAGE_SOURCE": "ci-test", "NCCL_CUMEM_HOST_ENABLE": "0"},
	},
}

// uploadedSteps assembles one step per recipe and reads back the pipeline
// as it is uploaded.
// uploadedStep is what these tests read of a recipe step.
type uploadedStep struct {
	Key     string                       `json:"key"`
	Env     map[string]string            `json:"env"`
	Plugins []map[string]json.RawMessage `json:"plugins"`
}

func uploadedSteps(t *testing.T, recipes []*workloads.Recipe, profiles *agents.Set, env map[string]string) map[string]uploadedStep {
	t.Helper()
	sel := &selection.Selection{}
	for _, r := range recipes {
		sel.Runs = append(sel.Runs, selection.Selected{Recipe: r})
	}
	p, err := assemble(sel, profiles, pipelineOptions{getenv: mapEnv(env)})
	if err != nil {
		t.Fatalf("assemble() error = %v", err)
	}
	out, err := steps.MarshalForUpload(p)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Steps []uploadedStep `json:"steps"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	byKey := map[string]uploadedStep{}
	for _, s := range doc.Steps {
		byKey[s.Key] = s
	}
	return byKey
}

// strictPod reads a pod spec as Kubernetes types, failing on any field
// Kubernetes does not know.
func strictPod(t *testing.T, raw json.RawMessage) corev1.PodSpec {
	t.Helper()
	var pod corev1.PodSpec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pod); err != nil {
		t.Fatalf("pod spec is not a v1.PodSpec: %v\n%s", err, raw)
	}
	return pod
}

func loadRecipes(t *testing.T, root string, profiles *agents.Set) []*workloads.Recipe {
	t.Helper()
	c, err := workloads.LoadDir(os.DirFS(root), "workloads", profiles)
	if err != nil {
		t.Fatal(err)
	}
	for path, ps := range c.Invalid {
		t.Errorf("%s/%s does not load: %v", root, path, ps)
	}
	if len(c.Recipes) == 0 {
		t.Fatalf("no recipes in %s/workloads", root)
	}
	return c.Recipes
}

// Every pod of the shipped and the reference recipes is a Kubernetes pod
// spec carrying what its cluster needs.
func TestPodSpecsCarryClusterFacts(t *testing.T) {
	t.Parallel()
	profiles, err := agents.Default()
	if err != nil {
		t.Fatal(err)
	}
	ref := testutil.ReferenceDir(t, "perf-eval")
	for _, root := range []string{"..", ref} {
		recipes := loadRecipes(t, root, profiles)
		byKey := uploadedSteps(t, recipes, profiles, nil)
		pods := 0
		for _, r := range recipes {
			step, ok := byKey[contract.StepKey(r.Name)]
			if !ok {
				t.Errorf("%s: no step", r.Name)
				continue
			}
			f, native := facts[r.GPU]
			if !native {
				if len(step.Plugins) != 0 {
					t.Errorf("%s on %s (docker) has plugins %v", r.Name, r.GPU, step.Plugins)
				}
				continue
			}
			if len(step.Plugins) != 1 || step.Plugins[0]["kubernetes"] == nil {
				t.Errorf("%s: plugins %v, want one kubernetes plugin", r.Name, step.Plugins)
				continue
			}
			var cfg map[string]json.RawMessage
			if err := json.Unmarshal(step.Plugins[0]["kubernetes"], &cfg); err != nil {
				t.Fatal(err)
			}
			if len(cfg) != 1 || cfg[f.field] == nil {
				t.Errorf("%s: kubernetes plugin keys %v, want only %s", r.Name, slices.Collect(maps.Keys(cfg)), f.field)
				continue
			}
			pods++
			checkPod(t, r.Name+" ("+filepath.Base(root)+")", strictPod(t, cfg[f.field]), f, step.Env["VLLM_IMAGE"], r.NumGPUs)
		}
		if pods == 0 {
			t.Errorf("%s: no pod specs checked", root)
		}
	}
}

func checkPod(t *testing.T, name string, pod corev1.PodSpec, f clusterFacts, image string, gpus int) {
	t.Helper()
	if len(pod.Containers) != 1 {
		t.Fatalf("%s: %d containers, want 1", name, len(pod.Containers))
	}
	c := pod.Containers[0]
	var problems []string
	bad := func(format string, args ...any) {
		problems = append(problems, name+": "+strings.TrimSpace(fmt.Sprintf(format, args...)))
	}
	if c.Name != "container-0" {
		bad("container name %q, want container-0", c.Name)
	}
	if c.Image != image || image == "" {
		bad("image %q, want the step's VLLM_IMAGE %q", c.Image, image)
	}
	q := c.Resources.Limits[corev1.ResourceName(f.resource)]
	if q.Value() != int64(gpus) || len(c.Resources.Limits) != 1 {
		bad("limits %v, want %s: %d", c.Resources.Limits, f.resource, gpus)
	}
	if rc := pod.RuntimeClassName; (rc == nil) != (f.runtimeClass == "") || (rc != nil && *rc != f.runtimeClass) {
		bad("runtimeClassName %v, want %q", rc, f.runtimeClass)
	}
	wantDNS := corev1.DNSPolicy("")
	if f.hostNetwork {
		wantDNS = corev1.DNSClusterFirstWithHostNet
	}
	if pod.HostNetwork != f.hostNetwork || pod.DNSPolicy != wantDNS {
		bad("hostNetwork %t dnsPolicy %q, want %t %q", pod.HostNetwork, pod.DNSPolicy, f.hostNetwork, wantDNS)
	}
	var secrets []string
	for _, s := range pod.ImagePullSecrets {
		secrets = append(secrets, s.Name)
	}
	if !cmp.Equal(secrets, f.pullSecrets) {
		bad("imagePullSecrets %v, want %v", secrets, f.pullSecrets)
	}
	var seccomp string
	var caps []string
	if sc := c.SecurityContext; sc != nil {
		if sc.SeccompProfile != nil {
			seccomp = string(sc.SeccompProfile.Type)
		}
		if sc.Capabilities != nil {
			for _, c := range sc.Capabilities.Add {
				caps = append(caps, string(c))
			}
		}
	}
	if seccomp != f.seccomp || !cmp.Equal(caps, f.capabilities) {
		bad("seccomp %q capabilities %v, want %q %v", seccomp, caps, f.seccomp, f.capabilities)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
	}
	mounted := map[string]corev1.Volume{}
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			bad("mount %s names no volume %q", m.MountPath, m.Name)
		}
		mounted[m.MountPath] = v
	}
	if shm := mounted["/dev/shm"]; shm.EmptyDir == nil || shm.EmptyDir.Medium != corev1.StorageMediumMemory {
		bad("/dev/shm is %+v, want an emptyDir in memory", shm.VolumeSource)
	}
	for _, hp := range f.hostPaths {
		v := mounted[hp]
		if v.HostPath == nil || v.HostPath.Path != hp || v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate {
			bad("%s is %+v, want hostPath %s DirectoryOrCreate", hp, v.VolumeSource, hp)
		}
	}
	wantMounts := 1 + len(f.hostPaths)
	if f.hfCacheEmptyDir {
		wantMounts++
		if v := mounted[f.hfHome]; v.EmptyDir == nil || v.EmptyDir.Medium != "" {
			bad("HF cache %s is %+v, want an emptyDir on disk", f.hfHome, v.VolumeSource)
		}
	}
	if len(c.VolumeMounts) != wantMounts || len(pod.Volumes) != wantMounts {
		bad("%d mounts and %d volumes, want %d", len(c.VolumeMounts), len(pod.Volumes), wantMounts)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	for k, want := range f.env {
		if got := env[k]; got.Value != want || got.ValueFrom != nil {
			bad("env %s = %+v, want %q", k, got, want)
		}
	}
	if got := env["HF_HOME"].Value; got != f.hfHome {
		bad("HF_HOME = %q, want %q", got, f.hfHome)
	}
	tok := env["HF_TOKEN"]
	if tok.ValueFrom == nil || tok.ValueFrom.SecretKeyRef == nil {
		bad("HF_TOKEN is %+v, want a secret reference", tok)
	} else if ref := tok.ValueFrom.SecretKeyRef; ref.Name != f.tokenName || ref.Key != f.token || ref.Optional != nil {
		bad("HF_TOKEN from secret %s key %s optional %v, want %s key %s, not optional", ref.Name, ref.Key, ref.Optional, f.tokenName, f.token)
	}
	wantEnv := len(f.env) + 2
	if f.toolsDir != "" {
		wantEnv++
		if got := env["BENCHKITE_TOOLS_DIR"].Value; got != f.toolsDir {
			bad("BENCHKITE_TOOLS_DIR = %q, want %q", got, f.toolsDir)
		}
	}
	if len(c.Env) != wantEnv {
		bad("env %v, want exactly %v, HF_HOME, HF_TOKEN and BENCHKITE_TOOLS_DIR when the profile has tools_dir", c.Env, f.env)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// A B200 job pulls an image under public.ecr.aws/ through the cluster's
// pull-through cache; the step still names the image it asked for.
func TestPodImageRewrite(t *testing.T) {
	t.Parallel()
	profiles, err := agents.Default()
	if err != nil {
		t.Fatal(err)
	}
	var b200 []*workloads.Recipe
	for _, r := range loadRecipes(t, "..", profiles) {
		if r.GPU == "B200" {
			b200 = append(b200, r)
		}
	}
	if len(b200) == 0 {
		t.Fatal("no B200 recipe shipped")
	}
	const image = "public.ecr.aws/q9t5s3a7/vllm-ci-test-repo:0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		env  map[string]string
		pull string
	}{
		{env: map[string]string{"VLLM_IMAGE": image}, pull: "936637512419.dkr.ecr.us-west-2.amazonaws.com/vllm-ci-pull-through-cache/q9t5s3a7/vllm-ci-test-repo:0123456789abcdef0123456789abcdef01234567"},
		{env: map[string]string{"VLLM_IMAGE": image, "B200_IMAGE_REWRITE": "public.ecr.aws/=mirror.example/ecr/"}, pull: "mirror.example/ecr/q9t5s3a7/vllm-ci-test-repo:0123456789abcdef0123456789abcdef01234567"},
		{env: map[string]string{"VLLM_IMAGE": image, "B200_IMAGE_REWRITE": "none"}, pull: image},
	}
	for i, tt := range tests {
		for _, step := range uploadedSteps(t, b200, profiles, tt.env) {
			if step.Env["VLLM_IMAGE"] == "" {
				continue // the report step
			}
			var cfg map[string]json.RawMessage
			if err := json.Unmarshal(step.Plugins[0]["kubernetes"], &cfg); err != nil {
				t.Fatal(err)
			}
			pod := strictPod(t, cfg["podSpec"])
			if got := pod.Containers[0].Image; got != tt.pull || step.Env["VLLM_IMAGE"] != image {
				t.Errorf("case %d: pod image %q, step VLLM_IMAGE %q; want %q, %q", i, got, step.Env["VLLM_IMAGE"], tt.pull, image)
			}
		}
	}
}
