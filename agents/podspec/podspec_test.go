package podspec

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/agents"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func profile(t *testing.T, set *agents.Set, gpu string) agents.Profile {
	t.Helper()
	p, ok := set.Lookup(gpu)
	if !ok {
		t.Fatalf("no profile %s", gpu)
	}
	return p
}

// roundTrip writes the plugin config as the pipeline carries it and reads it
// back strictly: a field Kubernetes does not know fails the test.
func roundTrip(t *testing.T, s Spec) (string, corev1.PodSpec) {
	t.Helper()
	b, err := json.Marshal(s.Plugin())
	if err != nil {
		t.Fatal(err)
	}
	var plugin map[string]json.RawMessage
	if err := json.Unmarshal(b, &plugin); err != nil {
		t.Fatal(err)
	}
	if len(plugin) != 1 {
		t.Fatalf("plugin config has %d keys, want 1: %s", len(plugin), b)
	}
	var field string
	var raw json.RawMessage
	for field, raw = range plugin {
	}
	var pod corev1.PodSpec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pod); err != nil {
		t.Fatalf("pod spec is not a strict v1.PodSpec: %v\n%s", err, raw)
	}
	return field, pod
}

func TestBuildDefaultProfiles(t *testing.T) {
	t.Parallel()
	set, err := agents.Default()
	if err != nil {
		t.Fatal(err)
	}
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	runtimeClass := "nvidia"
	amd := func(gpus int) corev1.PodSpec {
		return corev1.PodSpec{
			ImagePullSecrets: []corev1.LocalObjectReference{{Name: "docker-config"}},
			Volumes: []corev1.Volume{
				{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
				{Name: "hf-cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Containers: []corev1.Container{{
				Name:  "container-0",
				Image: "vllm/vllm-openai-rocm:nightly",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
					"amd.com/gpu": quantity(t, gpus),
				}},
				SecurityContext: &corev1.SecurityContext{
					SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined},
					Capabilities:   &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK", "SYS_PTRACE"}},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "dshm", MountPath: "/dev/shm"},
					{Name: "hf-cache", MountPath: "/root/.cache/huggingface"},
				},
				Env: []corev1.EnvVar{
					{Name: "VLLM_USAGE_SOURCE", Value: "ci-test"},
					{Name: "HF_HOME", Value: "/root/.cache/huggingface"},
					{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token"}, Key: "TOKEN"}}},
				},
			}},
		}
	}
	tests := []struct {
		gpu   string
		job   Job
		field string
		want  corev1.PodSpec
	}{
		{gpu: "MI355X", job: Job{Image: "vllm/vllm-openai-rocm:nightly", NumGPUs: 8}, field: "podSpecPatch", want: amd(8)},
		{gpu: "MI300X", job: Job{Image: "vllm/vllm-openai-rocm:nightly", NumGPUs: 2}, field: "podSpecPatch", want: amd(2)},
		{
			gpu:   "B200",
			job:   Job{Image: "vllm/vllm-openai:nightly", NumGPUs: 4},
			field: "podSpec",
			want: corev1.PodSpec{
				RuntimeClassName: &runtimeClass,
				HostNetwork:      true,
				DNSPolicy:        corev1.DNSClusterFirstWithHostNet,
				ImagePullSecrets: []corev1.LocalObjectReference{{Name: "k8s-ecr-login-renew-docker-secret"}},
				Volumes: []corev1.Volume{
					{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
					{Name: "host-raid", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/raid", Type: &dirOrCreate}}},
					{Name: "host-mnt-shared", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/mnt/shared", Type: &dirOrCreate}}},
				},
				Containers: []corev1.Container{{
					Name:  "container-0",
					Image: "vllm/vllm-openai:nightly",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
						"nvidia.com/gpu": quantity(t, 4),
					}},
					SecurityContext: &corev1.SecurityContext{
						Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK", "SYS_RESOURCE"}},
					},
					VolumeMounts: []corev1.VolumeMount{
						{Name: "dshm", MountPath: "/dev/shm"},
						{Name: "host-raid", MountPath: "/raid"},
						{Name: "host-mnt-shared", MountPath: "/mnt/shared"},
					},
					Env: []corev1.EnvVar{
						{Name: "VLLM_USAGE_SOURCE", Value: "ci-test"},
						{Name: "NCCL_CUMEM_HOST_ENABLE", Value: "0"},
						{Name: "HF_HOME", Value: "/mnt/shared/hf_cache"},
						{Name: "BENCHKITE_TOOLS_DIR", Value: "/mnt/shared/benchkite-tools"},
						{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
							LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token-secret"}, Key: "token"}}},
					},
				}},
			},
		},
	}
	for _, tt := range tests {
		s, err := Build(profile(t, set, tt.gpu), tt.job, mapEnv(nil))
		if err != nil {
			t.Errorf("%s Build() error = %v", tt.gpu, err)
			continue
		}
		field, pod := roundTrip(t, s)
		if field != tt.field {
			t.Errorf("%s Build() field = %s, want %s", tt.gpu, field, tt.field)
		}
		if diff := cmp.Diff(pod, tt.want, sameQuantity); diff != "" {
			t.Errorf("%s Build() pod diff (-got +want):\n%s", tt.gpu, diff)
		}
	}
}

func quantity(t *testing.T, n int) resource.Quantity {
	t.Helper()
	return resource.MustParse(strconv.Itoa(n))
}

// sameQuantity compares quantities by value; their cached text differs
// between parsed and built ones.
var sameQuantity = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func TestBuildOverrides(t *testing.T) {
	t.Parallel()
	set, err := agents.Default()
	if err != nil {
		t.Fatal(err)
	}
	env := mapEnv(map[string]string{
		"MI355X_HF_CACHE_VOLUME": `{"persistentVolumeClaim": {"claimName": "hf-cache"}}`,
		"HF_TOKEN_K8S_SECRET":    "other-secret",
	})
	s, err := Build(profile(t, set, "MI355X"), Job{Image: "img:1", NumGPUs: 1}, env)
	if err != nil {
		t.Fatal(err)
	}
	_, pod := roundTrip(t, s)
	if got := pod.Volumes[1]; got.Name != "hf-cache" || got.PersistentVolumeClaim == nil || got.PersistentVolumeClaim.ClaimName != "hf-cache" {
		t.Errorf("hf-cache volume = %+v, want the PVC", got)
	}
	// The tools live in the persistent model cache too.
	var toolsDir string
	for _, e := range pod.Containers[0].Env {
		if e.Name == "BENCHKITE_TOOLS_DIR" {
			toolsDir = e.Value
		}
	}
	if toolsDir != "/root/.cache/huggingface/benchkite-tools" {
		t.Errorf("BENCHKITE_TOOLS_DIR = %q, want the PVC's /root/.cache/huggingface/benchkite-tools", toolsDir)
	}
	token := pod.Containers[0].Env[len(pod.Containers[0].Env)-1]
	if ref := token.ValueFrom.SecretKeyRef; ref.Name != "other-secret" || ref.Key != "TOKEN" || ref.Optional != nil {
		t.Errorf("HF_TOKEN = %+v, want secret other-secret key TOKEN, not optional", ref)
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	set, err := agents.Parse("p.yaml", []byte(`X1:
  queue: x
  vendor: amd
  image_repo: r/x
  k8s:
    hf_cache_volume:
      persistentVolumeClaim: {claimNam: hf-cache}
X2:
  queue: x
  vendor: nvidia
  image_repo: r/x
  runtime: docker
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		gpu  string
		job  Job
		env  map[string]string
		want string
	}{
		{name: "typo in the profile's volume", gpu: "X1", job: Job{Image: "i", NumGPUs: 1},
			want: `p.yaml:7:7: profile X1 k8s.hf_cache_volume: not a k8s volume source: json: unknown field "claimNam"`},
		{name: "typo in the override", gpu: "X1", job: Job{Image: "i", NumGPUs: 1}, env: map[string]string{"X1_HF_CACHE_VOLUME": `{"hostPath": {"pth": "/x"}}`},
			want: `X1_HF_CACHE_VOLUME: not a k8s volume source: json: unknown field "pth"`},
		{name: "null source", gpu: "X1", job: Job{Image: "i", NumGPUs: 1}, env: map[string]string{"X1_HF_CACHE_VOLUME": `{"emptyDir": null}`},
			want: "X1_HF_CACHE_VOLUME: volume source emptyDir is null"},
		{name: "docker profile", gpu: "X2", job: Job{Image: "i", NumGPUs: 1}, want: "profile X2 runs docker: it has no pod"},
		{name: "no GPUs", gpu: "X1", job: Job{Image: "i"}, want: "profile X1: a pod needs at least one GPU, got 0"},
	}
	for _, tt := range tests {
		_, err := Build(profile(t, set, tt.gpu), tt.job, mapEnv(tt.env))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Build() error = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestHostPathVolume(t *testing.T) {
	t.Parallel()
	for path, want := range map[string]string{"/raid": "host-raid", "/mnt/shared": "host-mnt-shared"} {
		if got := HostPathVolume(path); got != want {
			t.Errorf("HostPathVolume(%q) = %q, want %q", path, got, want)
		}
	}
}

// mapEnv adapts a map to agents.Env.
func mapEnv(m map[string]string) agents.Env { return func(k string) string { return m[k] } }
