package agents

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

func defaultSet(t *testing.T) *Set {
	t.Helper()
	s, err := Default()
	if err != nil {
		t.Fatalf("Default() error = %v", err)
	}
	return s
}

func lookup(t *testing.T, s *Set, gpu string) Profile {
	t.Helper()
	p, ok := s.Lookup(gpu)
	if !ok {
		t.Fatalf("Lookup(%q) found nothing", gpu)
	}
	return p
}

func TestDefaultProfiles(t *testing.T) {
	t.Parallel()
	s := defaultSet(t)
	if diff := cmp.Diff(s.Names(), []string{"B200", "B300", "H200", "MI300X", "MI355X", "XPU"}); diff != "" {
		t.Errorf("Names() diff (-got +want):\n%s", diff)
	}
	amdPod := func() *K8s {
		return &K8s{
			PodSpecField:     PodSpecPatchField,
			ImagePullSecrets: []string{"docker-config"},
			SeccompProfile:   "Unconfined",
			Capabilities:     []string{"IPC_LOCK", "SYS_PTRACE"},
			HFTokenSecret:    &SecretKey{Name: "hf-token", Key: "TOKEN"},
			Env:              []EnvVar{{"VLLM_USAGE_SOURCE", "ci-test"}},
		}
	}
	amdDocker := []string{"--device=/dev/kfd", "--device=/dev/dri", "--group-add=video", "--security-opt=seccomp=unconfined"}
	tests := []struct {
		gpu      string
		want     Profile
		resource string
		docker   []string
	}{
		{
			gpu:      "MI355X",
			want:     Profile{GPU: "MI355X", Queue: "mi355_perf_eval", Emoji: ":amd:", Vendor: AMD, ImageRepo: "vllm/vllm-openai-rocm", Runtime: Native, ModelCacheNote: emptyDirNote("MI355X"), K8s: amdPod()},
			resource: "amd.com/gpu",
			docker:   amdDocker,
		},
		{
			gpu:      "MI300X",
			want:     Profile{GPU: "MI300X", Queue: "mi300_perf_eval", Emoji: ":amd:", Vendor: AMD, ImageRepo: "vllm/vllm-openai-rocm", Runtime: Native, ModelCacheNote: emptyDirNote("MI300X"), K8s: amdPod()},
			resource: "amd.com/gpu",
			docker:   amdDocker,
		},
		{
			gpu: "H200",
			want: Profile{GPU: "H200", Queue: "H200", Emoji: ":nvidia:", Vendor: NVIDIA, ImageRepo: "vllm/vllm-openai", Runtime: Docker,
				HFHome: "/mnt/shared/hf-models", Env: []EnvVar{{"VLLM_DEEP_GEMM_WARMUP", "skip"}}},
			resource: "nvidia.com/gpu",
			docker:   []string{"--gpus=all"},
		},
		{
			gpu: "B200",
			want: Profile{GPU: "B200", Queue: "b200-k8s", Emoji: ":nvidia:", Vendor: NVIDIA, ImageRepo: "vllm/vllm-openai", Runtime: Native,
				ImageRewrite: &ImageRewrite{From: "public.ecr.aws/", To: "936637512419.dkr.ecr.us-west-2.amazonaws.com/vllm-ci-pull-through-cache/"},
				HFHome:       "/mnt/shared/hf_cache",
				Env:          []EnvVar{{"VLLM_DEEP_GEMM_WARMUP", "skip"}, {"NCCL_CUMEM_HOST_ENABLE", "0"}},
				K8s: &K8s{
					PodSpecField:     PodSpecField,
					RuntimeClassName: "nvidia",
					HostNetwork:      true,
					ImagePullSecrets: []string{"k8s-ecr-login-renew-docker-secret"},
					Capabilities:     []string{"IPC_LOCK", "SYS_RESOURCE"},
					HostPaths:        []string{"/raid", "/mnt/shared"},
					ToolsDir:         "/mnt/shared/benchkite-tools",
					HFTokenSecret:    &SecretKey{Name: "hf-token-secret", Key: "token"},
					Env:              []EnvVar{{"VLLM_USAGE_SOURCE", "ci-test"}, {"NCCL_CUMEM_HOST_ENABLE", "0"}},
				}},
			resource: "nvidia.com/gpu",
			docker:   []string{"--gpus=all"},
		},
	}
	// XPU's container variant adds to the common flags.
	xpu := lookup(t, s, "XPU")
	wantXPU := Profile{GPU: "XPU", Queue: "intel-gpu", Emoji: ":intel:", Vendor: Intel, ImageRepo: "vllm/vllm-openai-xpu", Runtime: Docker,
		HFHome: "/data/huggingface", Tags: map[string]string{"label": "performance", "gpu": "1+", "mem": "32+"},
		Docker: &DockerVariant{HostNetwork: true, Privileged: true, Bashrc: true, BindIfPresent: []string{"/dev/dri/by-path"}, PassEnv: []string{"ZE_AFFINITY_MASK"}}}
	if diff := cmp.Diff(xpu, wantXPU); diff != "" {
		t.Errorf("XPU profile diff (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(xpu.DockerRunFlags(), []string{"--ipc=host", "--ulimit=nofile=65536:65536", "--device=/dev/dri:/dev/dri", "--network=host", "--privileged"}); diff != "" {
		t.Errorf("XPU DockerRunFlags() diff (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(xpu.AgentTags("q"), map[string]string{"queue": "q", "label": "performance", "gpu": "1+", "mem": "32+"}); diff != "" {
		t.Errorf("XPU AgentTags() diff (-got +want):\n%s", diff)
	}
	if !xpu.HostNetwork() || xpu.Platform() != XPU {
		t.Errorf("XPU HostNetwork() = %v, Platform() = %s; want true, XPU", xpu.HostNetwork(), xpu.Platform())
	}
	// B300: a standalone docker host, the server on the host's network.
	b300 := lookup(t, s, "B300")
	wantB300 := Profile{GPU: "B300", Queue: "b300-8", Emoji: ":nvidia:", Vendor: NVIDIA, ImageRepo: "vllm/vllm-openai", Runtime: Docker,
		HFHome: "/raid/buildkite/hf-cache", Env: []EnvVar{{"VLLM_DEEP_GEMM_WARMUP", "skip"}, {"NCCL_CUMEM_HOST_ENABLE", "0"}},
		Docker: &DockerVariant{HostNetwork: true, BindIfPresent: []string{"/raid"}}}
	if diff := cmp.Diff(b300, wantB300); diff != "" {
		t.Errorf("B300 profile diff (-got +want):\n%s", diff)
	}
	if diff := cmp.Diff(b300.DockerRunFlags(), []string{"--ipc=host", "--ulimit=nofile=65536:65536", "--gpus=all", "--network=host"}); diff != "" {
		t.Errorf("B300 DockerRunFlags() diff (-got +want):\n%s", diff)
	}
	if !b300.HostNetwork() || b300.Platform() != CUDA || b300.GPUResource() != "nvidia.com/gpu" {
		t.Errorf("B300 HostNetwork() = %v, Platform() = %s, GPUResource() = %s; want true, CUDA, nvidia.com/gpu", b300.HostNetwork(), b300.Platform(), b300.GPUResource())
	}
	for _, tt := range tests {
		p := lookup(t, s, tt.gpu)
		if diff := cmp.Diff(p, tt.want); diff != "" {
			t.Errorf("%s profile diff (-got +want):\n%s", tt.gpu, diff)
		}
		if got := p.GPUResource(); got != tt.resource {
			t.Errorf("%s GPUResource() = %s, want %s", tt.gpu, got, tt.resource)
		}
		if diff := cmp.Diff(p.DockerDeviceFlags(), tt.docker); diff != "" {
			t.Errorf("%s DockerDeviceFlags() diff (-got +want):\n%s", tt.gpu, diff)
		}
		wantRun := append([]string{"--ipc=host", "--ulimit=nofile=65536:65536"}, tt.docker...)
		if diff := cmp.Diff(p.DockerRunFlags(), wantRun); diff != "" {
			t.Errorf("%s DockerRunFlags() diff (-got +want):\n%s", tt.gpu, diff)
		}
		if got, want := p.Device(), strings.ToLower(tt.gpu); got != want {
			t.Errorf("%s Device() = %s, want %s", tt.gpu, got, want)
		}
	}
}

// The defaults are the clusters the reference pipeline runs on: the same
// queues, HF homes, runtimes and image repositories as its gpu_profiles.
func TestDefaultProfilesMatchReference(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(testutil.ReferenceDir(t, "perf-eval") + "/gpu_profiles.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ref map[string]struct {
		Queue         string `yaml:"queue"`
		HFHome        string `yaml:"hf_home"`
		ImageRepo     string `yaml:"image_repo"`
		ServerRuntime string `yaml:"server_runtime"`
		K8sPlugin     string `yaml:"k8s_plugin"`
	}
	if err := yaml.Unmarshal(src, &ref); err != nil {
		t.Fatal(err)
	}
	s := defaultSet(t)
	if len(ref) == 0 {
		t.Fatal("no reference profiles")
	}
	for gpu, r := range ref {
		p := lookup(t, s, gpu)
		runtime := Docker
		if r.ServerRuntime == "native" {
			runtime = Native
		}
		repo := r.ImageRepo
		if repo == "" {
			repo = "vllm/vllm-openai"
		}
		got := []string{p.Queue, p.HFHome, p.ImageRepo, string(p.Runtime)}
		want := []string{r.Queue, r.HFHome, repo, string(runtime)}
		if r.K8sPlugin != "" {
			got, want = append(got, string(p.Vendor)), append(want, r.K8sPlugin)
		}
		if diff := cmp.Diff(got, want); diff != "" {
			t.Errorf("%s [queue hf_home image_repo runtime vendor] diff (-got +want):\n%s", gpu, diff)
		}
	}
}

func TestLookup(t *testing.T) {
	t.Parallel()
	s := defaultSet(t)
	for _, name := range []string{"MI355X", "mi355x", "Mi355X"} {
		if p, ok := s.Lookup(name); !ok || p.GPU != "MI355X" {
			t.Errorf("Lookup(%q) = %s, %t; want MI355X", name, p.GPU, ok)
		}
	}
	for _, name := range []string{"", "A100", "MI355"} {
		if _, ok := s.Lookup(name); ok {
			t.Errorf("Lookup(%q) found a profile", name)
		}
	}
	names := s.Names()
	names[0] = "changed"
	if s.Names()[0] == "changed" {
		t.Error("Names() returns the set's own slice")
	}
}

func TestQueueFor(t *testing.T) {
	t.Parallel()
	s := defaultSet(t)
	tests := []struct {
		gpu         string
		env         map[string]string
		queue, from string
	}{
		{gpu: "MI355X", queue: "mi355_perf_eval", from: "profile"},
		{gpu: "MI355X", env: map[string]string{"MI355X_QUEUE": " mi355x-canary "}, queue: "mi355x-canary", from: "MI355X_QUEUE"},
		{gpu: "MI355X", env: map[string]string{"MI300X_QUEUE": "other", "MI355X_QUEUE": "  "}, queue: "mi355_perf_eval", from: "profile"},
		{gpu: "B200", env: map[string]string{"B200_QUEUE": "b200-canary"}, queue: "b200-canary", from: "B200_QUEUE"},
	}
	for _, tt := range tests {
		q, from := lookup(t, s, tt.gpu).QueueFor(mapEnv(tt.env))
		if q != tt.queue || from != tt.from {
			t.Errorf("%s QueueFor(%v) = %s, %s; want %s, %s", tt.gpu, tt.env, q, from, tt.queue, tt.from)
		}
	}
}

func TestHFCacheVolume(t *testing.T) {
	t.Parallel()
	s := defaultSet(t)
	custom, err := Parse("c.yaml", []byte(`X1:
  queue: x
  vendor: amd
  image_repo: r/x
  k8s:
    hf_cache_volume: {persistentVolumeClaim: {claimName: hf-cache, readOnly: false}}
`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		set     *Set
		gpu     string
		env     map[string]string
		want    string
		from    string
		wantErr string
	}{
		{name: "emptyDir by default", gpu: "MI355X", want: `{"emptyDir":{}}`, from: "default"},
		{name: "none inside a host path", gpu: "B200", from: "host path /mnt/shared"},
		{name: "profile volume", set: custom, gpu: "X1", want: `{"persistentVolumeClaim":{"claimName":"hf-cache","readOnly":false}}`, from: "profile"},
		{
			name: "JSON override",
			gpu:  "MI355X",
			env:  map[string]string{"MI355X_HF_CACHE_VOLUME": `{"persistentVolumeClaim": {"claimName": "hf-cache"}}`},
			want: `{"persistentVolumeClaim": {"claimName": "hf-cache"}}`,
			from: "MI355X_HF_CACHE_VOLUME",
		},
		{
			name: "override wins over the profile",
			set:  custom,
			gpu:  "X1",
			env:  map[string]string{"X1_HF_CACHE_VOLUME": `{"emptyDir": {"medium": "Memory"}}`},
			want: `{"emptyDir": {"medium": "Memory"}}`,
			from: "X1_HF_CACHE_VOLUME",
		},
		{
			name: "override wins over a host path",
			gpu:  "B200",
			env:  map[string]string{"B200_HF_CACHE_VOLUME": `{"hostPath": {"path": "/raid/hf"}}`},
			want: `{"hostPath": {"path": "/raid/hf"}}`,
			from: "B200_HF_CACHE_VOLUME",
		},
		{
			name:    "override is not JSON",
			gpu:     "MI300X",
			env:     map[string]string{"MI300X_HF_CACHE_VOLUME": "pvc:hf-cache"},
			wantErr: "MI300X_HF_CACHE_VOLUME must be a JSON object holding a k8s volume source: ",
		},
		{
			name:    "override is a list",
			gpu:     "MI300X",
			env:     map[string]string{"MI300X_HF_CACHE_VOLUME": `[{"emptyDir": {}}]`},
			wantErr: "MI300X_HF_CACHE_VOLUME must be a JSON object",
		},
		{
			name:    "override holds two sources",
			gpu:     "MI300X",
			env:     map[string]string{"MI300X_HF_CACHE_VOLUME": `{"emptyDir": {}, "hostPath": {"path": "/x"}}`},
			wantErr: "MI300X_HF_CACHE_VOLUME must hold exactly one volume source (such as persistentVolumeClaim or hostPath), got 2 keys",
		},
		{
			name:    "override mounts the node's root",
			gpu:     "B200",
			env:     map[string]string{"B200_HF_CACHE_VOLUME": `{"hostPath": {"path": "/"}}`},
			wantErr: "B200_HF_CACHE_VOLUME hostPath.path must be an absolute directory",
		},
		{
			name:    "override mounts a relative path",
			gpu:     "B200",
			env:     map[string]string{"B200_HF_CACHE_VOLUME": `{"hostPath": {"path": "hf"}}`},
			wantErr: "B200_HF_CACHE_VOLUME hostPath.path must be an absolute directory",
		},
		{
			name:    "override mounts the kubelet's state",
			gpu:     "B200",
			env:     map[string]string{"B200_HF_CACHE_VOLUME": `{"hostPath": {"path": "/var/lib/kubelet/pods"}}`},
			wantErr: "must not be a system directory",
		},
		{
			name:    "override mounts a directory holding system state",
			gpu:     "B200",
			env:     map[string]string{"B200_HF_CACHE_VOLUME": `{"hostPath": {"path": "/var"}}`},
			wantErr: "must not be a system directory",
		},
		{
			name:    "override mounts /etc",
			gpu:     "B200",
			env:     map[string]string{"B200_HF_CACHE_VOLUME": `{"hostPath": {"path": "/etc", "type": "Directory"}}`},
			wantErr: "must not be a system directory",
		},
		{
			name:    "override hostPath without a path object",
			gpu:     "B200",
			env:     map[string]string{"B200_HF_CACHE_VOLUME": `{"hostPath": "/raid"}`},
			wantErr: "hostPath must be an object with a path",
		},
		{
			name:    "override is empty object",
			gpu:     "MI300X",
			env:     map[string]string{"MI300X_HF_CACHE_VOLUME": `{}`},
			wantErr: "got 0 keys",
		},
	}
	for _, tt := range tests {
		set := tt.set
		if set == nil {
			set = s
		}
		got, from, err := lookup(t, set, tt.gpu).HFCacheVolume(mapEnv(tt.env))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: HFCacheVolume() error = %v, want one containing %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: HFCacheVolume() error = %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(string(got), tt.want); diff != "" || from != tt.from {
			t.Errorf("%s: HFCacheVolume() from %q (want %q), diff (-got +want):\n%s", tt.name, from, tt.from, diff)
		}
	}
}

func TestImageFor(t *testing.T) {
	t.Parallel()
	s := defaultSet(t)
	const ecr = "936637512419.dkr.ecr.us-west-2.amazonaws.com/vllm-ci-pull-through-cache/"
	tests := []struct {
		gpu, image string
		env        map[string]string
		want, from string
		wantErr    string
	}{
		{gpu: "B200", image: "public.ecr.aws/q9t5s3a7/vllm-ci-test-repo:abc", want: ecr + "q9t5s3a7/vllm-ci-test-repo:abc", from: "profile"},
		{gpu: "B200", image: "vllm/vllm-openai:nightly", want: "vllm/vllm-openai:nightly"},
		{gpu: "MI355X", image: "public.ecr.aws/x/y:1", want: "public.ecr.aws/x/y:1"},
		{gpu: "B200", image: "public.ecr.aws/x/y:1", env: map[string]string{"B200_IMAGE_REWRITE": "none"}, want: "public.ecr.aws/x/y:1"},
		{gpu: "B200", image: "public.ecr.aws/x/y:1", env: map[string]string{"B200_IMAGE_REWRITE": "public.ecr.aws/=mirror.example:5000/cache/"}, want: "mirror.example:5000/cache/x/y:1", from: "B200_IMAGE_REWRITE"},
		{gpu: "MI300X", image: "docker.io/vllm/x:1", env: map[string]string{"MI300X_IMAGE_REWRITE": "docker.io/=mirror.example/hub/"}, want: "mirror.example/hub/vllm/x:1", from: "MI300X_IMAGE_REWRITE"},
		{gpu: "B200", image: "public.ecr.aws/x/y:1", env: map[string]string{"B200_IMAGE_REWRITE": "public.ecr.aws/"}, wantErr: "B200_IMAGE_REWRITE must be FROM=TO"},
		{gpu: "B200", image: "public.ecr.aws/x/y:1", env: map[string]string{"B200_IMAGE_REWRITE": "public.ecr.aws/=Mirror/"}, wantErr: "B200_IMAGE_REWRITE must be FROM=TO"},
	}
	for _, tt := range tests {
		got, from, err := lookup(t, s, tt.gpu).ImageFor(tt.image, mapEnv(tt.env))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s ImageFor(%q, %v) error = %v, want %q", tt.gpu, tt.image, tt.env, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want || from != tt.from {
			t.Errorf("%s ImageFor(%q, %v) = %q, %q, %v; want %q, %q", tt.gpu, tt.image, tt.env, got, from, err, tt.want, tt.from)
		}
	}
}

func TestK8sDefaults(t *testing.T) {
	t.Parallel()
	s, err := Parse("p.yaml", []byte("X1: {queue: x, vendor: nvidia, image_repo: r/x}\nX2: {queue: x, vendor: nvidia, image_repo: registry.local:5000/r/x, runtime: docker}\n"))
	if err != nil {
		t.Fatal(err)
	}
	p := lookup(t, s, "X1")
	if p.K8s == nil {
		t.Fatal("a native profile without k8s has no K8s")
	}
	if got := []string{p.K8s.Field(), p.K8s.Container()}; !cmp.Equal(got, []string{"podSpec", "container-0"}) {
		t.Errorf("K8s{}.Field(), Container() = %v, want podSpec, container-0", got)
	}
	if p := lookup(t, s, "X2"); p.K8s != nil {
		t.Errorf("docker profile K8s = %+v, want nil", p.K8s)
	}
}

func TestHFCacheDir(t *testing.T) {
	t.Parallel()
	s := defaultSet(t)
	if got := lookup(t, s, "H200").HFCacheDir(); got != "/mnt/shared/hf-models" {
		t.Errorf("H200 HFCacheDir() = %s", got)
	}
	if got := lookup(t, s, "B200").HFCacheDir(); got != "/mnt/shared/hf_cache" {
		t.Errorf("B200 HFCacheDir() = %s", got)
	}
	if got := lookup(t, s, "MI355X").HFCacheDir(); got != "/root/.cache/huggingface" {
		t.Errorf("MI355X HFCacheDir() = %s, want the container default", got)
	}
}

func TestParseHostile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "lower-case GPU name",
			src:  "mi355x:\n  queue: q\n  vendor: amd\n  image_repo: r/x\n",
			want: []string{`p.yaml:1:1: GPU name "mi355x" must be upper case letters and digits, like MI355X`},
		},
		{
			name: "typo'd field",
			src:  "H200:\n  queu: h200\n  vendor: nvidia\n  image_repo: vllm/vllm-openai\n",
			want: []string{
				"p.yaml:1:1: profile H200 needs queue",
				`p.yaml:2:3: unknown field "queu" in profile H200; did you mean "queue"?`,
			},
		},
		{
			name: "bad docker variant and agent tags",
			src: `XPU:
  queue: intel-gpu
  vendor: intel
  image_repo: vllm/vllm-openai-xpu
  runtime: docker
  agent_tags: {queue: other, "bad tag": x, mem: ""}
  docker:
    host_network: yes please
    bind_if_present: [dev/dri, /dev/dri/../x]
    pass_env: [1BAD]
    privilegd: true
M:
  queue: m
  vendor: amd
  image_repo: a/b
  docker: {privileged: true}
`,
			want: []string{
				`p.yaml:6:16: profile XPU: set the queue with queue, not agent_tags`,
				`p.yaml:6:30: agent tag "bad tag": use letters, digits, '_', '.' and '-'`,
				`p.yaml:6:49: agent tag mem: one line of text`,
				`p.yaml:8:19: docker.host_network must be true or false, got "yes please"`,
				`p.yaml:9:23: docker.bind_if_present "dev/dri": an absolute clean path without spaces, ':' or ','`,
				`p.yaml:9:32: docker.bind_if_present "/dev/dri/../x": an absolute clean path without spaces, ':' or ','`,
				`p.yaml:10:16: docker.pass_env "1BAD" is not a variable name`,
				`p.yaml:11:5: unknown field "privilegd" in profile XPU docker; did you mean "privileged"?`,
				`p.yaml:16:3: profile M runs native, in its own pod; docker applies to runtime docker only`,
			},
		},
		{
			name: "bad values",
			src: `H200:
  queue: "h200 fast"
  vendor: arm
  image_repo: vllm/vllm-openai:nightly
  runtime: podman
  hf_home: cache/hf
  env:
    1X: a
    OK: [1]
`,
			want: []string{
				`p.yaml:2:10: queue "h200 fast": use letters, digits, '_', '.' and '-'`,
				`p.yaml:3:11: vendor must be amd, nvidia or intel, got "arm"`,
				`p.yaml:4:15: image_repo "vllm/vllm-openai:nightly" is not an image repository name (no tag)`,
				`p.yaml:5:12: runtime must be native or docker, got "podman"`,
				`p.yaml:6:12: hf_home must be an absolute path without spaces or ':', got "cache/hf"`,
				`p.yaml:8:5: env name "1X" must match [A-Za-z_][A-Za-z0-9_]*`,
				"p.yaml:9:9: env OK must be a string, number or boolean, got a list",
			},
		},
		{
			name: "server env the runner would refuse",
			src:  "H200:\n  queue: h\n  vendor: nvidia\n  image_repo: r/x\n  env:\n    LD_AUDIT: /x.so\n    HF_ENDPOINT: https://h.example.net\n    VLLM_OK: \"1\"\n",
			want: []string{
				"p.yaml:6:5: env cannot set LD_AUDIT: the dynamic loader's settings change which libraries are loaded",
				"p.yaml:7:5: env cannot set HF_ENDPOINT: it changes where the Hugging Face token is sent, or who can read it on the way",
			},
		},
		{
			name: "k8s on a docker profile",
			src:  "H200:\n  queue: h\n  vendor: nvidia\n  image_repo: r/x\n  runtime: docker\n  k8s: {host_network: true}\n",
			want: []string{"p.yaml:6:3: profile H200 runs docker, where no pod is made; k8s applies to runtime native only"},
		},
		{
			name: "bad k8s values",
			src: `B200:
  queue: b
  vendor: nvidia
  image_repo: r/x
  image_rewrite: {from: public.ecr.aws, to: "Cache/"}
  k8s:
    pod_spec: podSpecPatches
    container_name: Container_0
    runtime_class_name: "nvidia runtime"
    host_network: "yes"
    image_pull_secrets: [ecr, ecr, "Bad Secret"]
    seccomp_profile: unconfined
    capabilities: [ipc_lock]
    host_paths: [raid, /mnt/shared/, /dev/shm, /a/../b]
    hf_token_secret: {name: hf-token}
    hf_cache_volume: {emptyDir: {}, hostPath: {path: /x}}
    env: {1X: a}
    tools_dir: /var/benchkite-tools
    hostNetwork: true
`,
			want: []string{
				`p.yaml:5:25: profile B200 image_rewrite.from "public.ecr.aws" is not an image reference prefix ending in '/', such as public.ecr.aws/`,
				`p.yaml:5:45: profile B200 image_rewrite.to "Cache/" is not an image reference prefix ending in '/', such as public.ecr.aws/`,
				`p.yaml:7:15: profile B200 k8s.pod_spec must be podSpec (replace the controller's pod) or podSpecPatch (merge into it), got "podSpecPatches"`,
				`p.yaml:8:21: profile B200 k8s.container_name "Container_0" is not a DNS label (lower case letters, digits and '-')`,
				`p.yaml:9:25: profile B200 k8s.runtime_class_name "nvidia runtime" is not a k8s object name`,
				`p.yaml:10:19: profile B200 k8s.host_network must be true or false, got "yes"`,
				`p.yaml:11:31: profile B200 k8s.image_pull_secrets: "ecr" is listed twice`,
				`p.yaml:11:36: profile B200 k8s.image_pull_secrets: "Bad Secret" is not a k8s secret name`,
				`p.yaml:12:22: profile B200 k8s.seccomp_profile must be Unconfined or RuntimeDefault, got "unconfined"`,
				`p.yaml:13:20: profile B200 k8s.capabilities: "ipc_lock" is not a capability name such as IPC_LOCK`,
				`p.yaml:14:18: profile B200 k8s.host_paths entry must be an absolute directory without spaces, ':', '..' or a trailing '/', got "raid"`,
				`p.yaml:14:24: profile B200 k8s.host_paths entry must be an absolute directory without spaces, ':', '..' or a trailing '/', got "/mnt/shared/"`,
				`p.yaml:14:38: profile B200 k8s.host_paths: /dev/shm is always a memory-backed emptyDir`,
				`p.yaml:14:48: profile B200 k8s.host_paths entry must be an absolute directory without spaces, ':', '..' or a trailing '/', got "/a/../b"`,
				`p.yaml:15:22: profile B200 k8s.hf_token_secret needs name and key`,
				`p.yaml:16:22: profile B200 k8s.hf_cache_volume must hold exactly one k8s volume source, such as {persistentVolumeClaim: {claimName: hf-cache}}`,
				`p.yaml:17:11: env name "1X" must match [A-Za-z_][A-Za-z0-9_]*`,
				`p.yaml:18:16: profile B200 k8s.tools_dir /var/benchkite-tools lies in no host path: the venvs would go with the pod; add a host_paths entry holding it`,
				`p.yaml:19:5: unknown field "hostNetwork" in profile B200 k8s; did you mean "host_network"?`,
			},
		},
		{
			name: "duplicate GPU",
			src:  "H200: {queue: a, vendor: nvidia, image_repo: r/x}\nH200: {queue: b, vendor: nvidia, image_repo: r/x}\n",
			want: []string{`p.yaml:2:1: duplicate key "H200" in the profile file (first at line 1)`},
		},
		{
			name: "profile not a mapping",
			src:  "H200: h200\n",
			want: []string{`p.yaml:1:7: profile H200 must be a mapping, got "h200"`},
		},
		{
			name: "file not a mapping",
			src:  "- H200\n",
			want: []string{"p.yaml:1:1: the profile file must be a mapping, got a list"},
		},
		{
			name: "empty file",
			src:  "# no profiles\n",
			want: []string{"p.yaml:1:1: file is empty"},
		},
		{
			name: "no profiles",
			src:  "{}\n",
			want: []string{"p.yaml:1:1: no GPU profiles defined"},
		},
		{
			name: "syntax error",
			src:  "H200:\n  queue: [h200\n",
			want: []string{"p.yaml:2:3: YAML syntax: did not find expected ',' or ']'"},
		},
		{
			name: "merge key",
			src:  "base: &b {queue: q}\n",
			want: []string{`p.yaml:1:1: GPU name "base" must be upper case letters and digits, like MI355X`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse("p.yaml", []byte(tt.src))
			if s != nil {
				t.Errorf("Parse() set = %v, want nil", s.Names())
			}
			var ps strictyaml.Problems
			if !errors.As(err, &ps) {
				t.Fatalf("Parse() error = %v, want strictyaml.Problems", err)
			}
			if !errors.Is(err, strictyaml.ErrInvalid) {
				t.Error("errors.Is(err, ErrInvalid) = false")
			}
			var got []string
			for _, p := range ps {
				got = append(got, p.Error())
			}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Parse() problems diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "profiles.yaml"), filepath.Join(dir, "bad.yaml")
	for path, src := range map[string]string{
		good: "X1: {queue: x, vendor: amd, image_repo: r/x-rocm, runtime: docker}\n",
		bad:  "X1: {queue: x}\n",
	} {
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := LoadFile(good)
	if err != nil {
		t.Fatalf("LoadFile() error = %v", err)
	}
	want := Profile{GPU: "X1", Queue: "x", Vendor: AMD, ImageRepo: "r/x-rocm", Runtime: Docker}
	if diff := cmp.Diff(lookup(t, s, "X1"), want); diff != "" || s.Path != good {
		t.Errorf("LoadFile() path %s, profile diff (-got +want):\n%s", s.Path, diff)
	}
	if _, err := LoadFile(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml:1:1: profile X1 needs vendor") {
		t.Errorf("LoadFile(bad) error = %v", err)
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "read agent profiles: ") {
		t.Errorf("LoadFile(missing) error = %v", err)
	}
	// "" is the checkout's file, relative to the working directory.
	if _, err := LoadFile(""); err == nil || !strings.Contains(err.Error(), "open "+DefaultPath) {
		t.Errorf("LoadFile(\"\") in the package folder = %v, want an error opening %s", err, DefaultPath)
	}
	s, err = LoadFile("profiles.yaml")
	if err != nil {
		t.Fatalf("LoadFile(profiles.yaml): %v", err)
	}
	if diff := cmp.Diff(s.Names(), defaultSet(t).Names()); diff != "" {
		t.Errorf("LoadFile(profiles.yaml) profiles diff (-got +want):\n%s", diff)
	}
}

func TestProfileEqual(t *testing.T) {
	t.Parallel()
	s := defaultSet(t)
	a, b := lookup(t, s, "MI355X"), lookup(t, s, "MI300X")
	if !a.Equal(a) {
		t.Error("a profile differs from itself")
	}
	if a.Equal(b) {
		t.Error("MI355X equals MI300X")
	}
	c := a
	c.Env = []EnvVar{{"X", "1"}}
	if a.Equal(c) {
		t.Error("a change of env went unnoticed")
	}
}

// mapEnv adapts a map to Env.
func mapEnv(m map[string]string) Env { return func(k string) string { return m[k] } }

// gpu_hour_price is a plain, non-negative number.
func TestGPUHourPrice(t *testing.T) {
	t.Parallel()
	const base = "H200:\n  queue: q\n  vendor: nvidia\n  image_repo: vllm/vllm-openai\n"
	set, err := Parse("p.yaml", []byte(base+"  gpu_hour_price: 2.5\n  bisect_gpu_hours: 40\n"))
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := set.Lookup("H200"); !ok || p.GPUHourPrice != 2.5 || p.BisectGPUHours != 40 {
		t.Errorf("GPUHourPrice = %v (found %v), want 2.5", p.GPUHourPrice, ok)
	}
	if _, err := Parse("p.yaml", []byte(base+"  gpu_hour_price: -1\n")); err == nil || !strings.Contains(err.Error(), "p.yaml:5:") || !strings.Contains(err.Error(), "gpu_hour_price must be between") {
		t.Errorf("negative price: err = %v, want one naming p.yaml:5", err)
	}
}

// emptyDirNote is the AMD profiles' model_cache_note: why their model
// cache does not persist.
func emptyDirNote(gpu string) string {
	return "The model cache is an emptyDir, so every job downloads the model again: no node directory or PVC is known on this cluster (its pods get an emptyDir so the cache never fills a node's disk). Where the nodes have a disk for it, set " + gpu + "_HF_CACHE_VOLUME or k8s.hf_cache_volume to a persistentVolumeClaim or a hostPath on that disk."
}

// Each profile says where its model cache lives and whether it persists:
// the B200 and H200 caches on node directories do, the AMD emptyDir does
// not (and the profile says why), a PVC given in the build does.
func TestModelCache(t *testing.T) {
	t.Parallel()
	s := defaultSet(t)
	env := func(m map[string]string) Env { return func(k string) string { return m[k] } }
	tests := []struct {
		gpu  string
		env  map[string]string
		want ModelCache
	}{
		{"B200", nil, ModelCache{Dir: "/mnt/shared/hf_cache", Backing: "node-local host path /mnt/shared (hostPath)", Persistent: true}},
		{"H200", nil, ModelCache{Dir: "/mnt/shared/hf-models", Backing: "host directory /mnt/shared/hf-models mounted at the same path", Persistent: true}},
		{"MI355X", nil, ModelCache{Dir: "/root/.cache/huggingface", Backing: "emptyDir (from default)", Note: emptyDirNote("MI355X")}},
		{"MI355X", map[string]string{"MI355X_HF_CACHE_VOLUME": `{"persistentVolumeClaim":{"claimName":"hf"}}`},
			ModelCache{Dir: "/root/.cache/huggingface", Backing: "persistentVolumeClaim (from MI355X_HF_CACHE_VOLUME)", Persistent: true, Note: emptyDirNote("MI355X")}},
	}
	for _, tt := range tests {
		p, _ := s.Lookup(tt.gpu)
		got, err := p.ModelCache(env(tt.env))
		if err != nil {
			t.Fatalf("%s ModelCache() error = %v", tt.gpu, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %v ModelCache() diff (-want +got):\n%s", tt.gpu, tt.env, diff)
		}
	}
}

// The tools venvs go to a node path, else into a model cache that
// outlives the pod, else the pod's home, and explain says which.
func TestTools(t *testing.T) {
	t.Parallel()
	s := defaultSet(t)
	env := func(m map[string]string) Env { return func(k string) string { return m[k] } }
	tests := []struct {
		gpu  string
		env  map[string]string
		want ToolsPlace
	}{
		{"B200", nil, ToolsPlace{Dir: "/mnt/shared/benchkite-tools", Persistent: true, Why: "node path: installed once per node and lock"}},
		{"H200", nil, ToolsPlace{Persistent: true, Why: "the agent host's home: installed once per host and lock"}},
		{"MI355X", nil, ToolsPlace{Why: "the pod's home, installed again every job: the profile has no k8s.tools_dir and its model cache is an emptyDir; a persistentVolumeClaim or hostPath in MI355X_HF_CACHE_VOLUME would hold the tools too"}},
		{"MI300X", map[string]string{"MI300X_HF_CACHE_VOLUME": `{"persistentVolumeClaim":{"claimName":"hf"}}`},
			ToolsPlace{Dir: "/root/.cache/huggingface/benchkite-tools", Persistent: true, Why: "inside the model cache, persistentVolumeClaim (from MI300X_HF_CACHE_VOLUME): installed once per volume and lock"}},
		{"MI355X", map[string]string{"MI355X_HF_CACHE_VOLUME": `{"hostPath":{"path":"/data/hf"}}`},
			ToolsPlace{Dir: "/root/.cache/huggingface/benchkite-tools", Persistent: true, Why: "inside the model cache, hostPath (from MI355X_HF_CACHE_VOLUME): installed once per volume and lock"}},
		{"MI355X", map[string]string{"MI355X_HF_CACHE_VOLUME": `{"emptyDir":{"sizeLimit":"1Ti"}}`},
			ToolsPlace{Why: "the pod's home, installed again every job: the profile has no k8s.tools_dir and its model cache is an emptyDir; a persistentVolumeClaim or hostPath in MI355X_HF_CACHE_VOLUME would hold the tools too"}},
	}
	for _, tt := range tests {
		p, _ := s.Lookup(tt.gpu)
		got, err := p.Tools(env(tt.env))
		if err != nil {
			t.Fatalf("%s Tools() error = %v", tt.gpu, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %v Tools() diff (-want +got):\n%s", tt.gpu, tt.env, diff)
		}
	}
	p, _ := s.Lookup("MI355X")
	if _, err := p.Tools(env(map[string]string{"MI355X_HF_CACHE_VOLUME": `[1]`})); err == nil {
		t.Errorf("Tools() with a bad MI355X_HF_CACHE_VOLUME: no error")
	}
}
