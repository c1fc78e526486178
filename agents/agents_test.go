package agents

import (
	"errors"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"github.com/google/go-cmp/cmp"
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
	if diff := cmp.Diff(s.Names(), []string{"B200", "H200", "MI300X", "MI355X"}); diff != "" {
		t.Errorf("Names() diff (-got +want):\n%s", diff)
	}
	tests := []struct {
		gpu      string
		want     Profile
		resource string
		docker   []string
	}{
		{
			gpu:      "MI355X",
			want:     Profile{GPU: "MI355X", Queue: "mi355x", Emoji: ":amd:", Vendor: AMD, ImageRepo: "vllm/vllm-openai-rocm", Runtime: Native},
			resource: "amd.com/gpu",
			docker:   []string{"--device=/dev/kfd", "--device=/dev/dri", "--group-add=video", "--security-opt=seccomp=unconfined"},
		},
		{
			gpu:      "MI300X",
			want:     Profile{GPU: "MI300X", Queue: "mi300x", Emoji: ":amd:", Vendor: AMD, ImageRepo: "vllm/vllm-openai-rocm", Runtime: Native},
			resource: "amd.com/gpu",
			docker:   []string{"--device=/dev/kfd", "--device=/dev/dri", "--group-add=video", "--security-opt=seccomp=unconfined"},
		},
		{
			gpu: "H200",
			want: Profile{GPU: "H200", Queue: "h200", Emoji: ":nvidia:", Vendor: NVIDIA, ImageRepo: "vllm/vllm-openai", Runtime: Docker,
				HFHome: "/mnt/shared/hf-models", Env: []EnvVar{{"VLLM_DEEP_GEMM_WARMUP", "skip"}}},
			resource: "nvidia.com/gpu",
			docker:   []string{"--gpus=all"},
		},
		{
			gpu: "B200",
			want: Profile{GPU: "B200", Queue: "b200-k8s", Emoji: ":nvidia:", Vendor: NVIDIA, ImageRepo: "vllm/vllm-openai", Runtime: Native,
				Env: []EnvVar{{"VLLM_DEEP_GEMM_WARMUP", "skip"}, {"NCCL_CUMEM_HOST_ENABLE", "0"}}},
			resource: "nvidia.com/gpu",
			docker:   []string{"--gpus=all"},
		},
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
		if got, want := p.Device(), strings.ToLower(tt.gpu); got != want {
			t.Errorf("%s Device() = %s, want %s", tt.gpu, got, want)
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
		{gpu: "MI355X", queue: "mi355x", from: "profile"},
		{gpu: "MI355X", env: map[string]string{"MI355X_QUEUE": " mi355_perf_eval "}, queue: "mi355_perf_eval", from: "MI355X_QUEUE"},
		{gpu: "MI355X", env: map[string]string{"MI300X_QUEUE": "other", "MI355X_QUEUE": "  "}, queue: "mi355x", from: "profile"},
		{gpu: "B200", env: map[string]string{"B200_QUEUE": "b200-canary"}, queue: "b200-canary", from: "B200_QUEUE"},
	}
	for _, tt := range tests {
		q, from := lookup(t, s, tt.gpu).QueueFor(MapEnv(tt.env))
		if q != tt.queue || from != tt.from {
			t.Errorf("%s QueueFor(%v) = %s, %s; want %s, %s", tt.gpu, tt.env, q, from, tt.queue, tt.from)
		}
	}
}

func TestHFCacheVolume(t *testing.T) {
	t.Parallel()
	s := defaultSet(t)
	tests := []struct {
		name    string
		gpu     string
		env     map[string]string
		want    map[string]any
		from    string
		wantErr string
	}{
		{name: "emptyDir by default", gpu: "MI355X", want: map[string]any{"emptyDir": map[string]any{}}, from: "default"},
		{
			name: "hostPath from hf_home",
			gpu:  "H200",
			want: map[string]any{"hostPath": map[string]any{"path": "/mnt/shared/hf-models", "type": "DirectoryOrCreate"}},
			from: "profile",
		},
		{
			name: "JSON override",
			gpu:  "MI355X",
			env:  map[string]string{"MI355X_HF_CACHE_VOLUME": `{"persistentVolumeClaim": {"claimName": "hf-cache"}}`},
			want: map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "hf-cache"}},
			from: "MI355X_HF_CACHE_VOLUME",
		},
		{
			name: "override wins over hf_home",
			gpu:  "H200",
			env:  map[string]string{"H200_HF_CACHE_VOLUME": `{"emptyDir": {"medium": "Memory"}}`},
			want: map[string]any{"emptyDir": map[string]any{"medium": "Memory"}},
			from: "H200_HF_CACHE_VOLUME",
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
			name:    "override is empty object",
			gpu:     "MI300X",
			env:     map[string]string{"MI300X_HF_CACHE_VOLUME": `{}`},
			wantErr: "got 0 keys",
		},
	}
	for _, tt := range tests {
		got, from, err := lookup(t, s, tt.gpu).HFCacheVolume(MapEnv(tt.env))
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
		if diff := cmp.Diff(got, tt.want); diff != "" || from != tt.from {
			t.Errorf("%s: HFCacheVolume() from %s (want %s), diff (-got +want):\n%s", tt.name, from, tt.from, diff)
		}
	}
}

func TestHFCacheDir(t *testing.T) {
	t.Parallel()
	s := defaultSet(t)
	if got := lookup(t, s, "H200").HFCacheDir(); got != "/mnt/shared/hf-models" {
		t.Errorf("H200 HFCacheDir() = %s", got)
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
			name: "bad values",
			src: `H200:
  queue: "h200 fast"
  vendor: intel
  image_repo: vllm/vllm-openai:nightly
  runtime: podman
  hf_home: cache/hf
  env:
    1X: a
    OK: [1]
`,
			want: []string{
				`p.yaml:2:10: queue "h200 fast": use letters, digits, '_', '.' and '-'`,
				`p.yaml:3:11: vendor must be amd or nvidia, got "intel"`,
				`p.yaml:4:15: image_repo "vllm/vllm-openai:nightly" is not an image repository name (no tag)`,
				`p.yaml:5:12: runtime must be native or docker, got "podman"`,
				`p.yaml:6:12: hf_home must be an absolute path without spaces or ':', got "cache/hf"`,
				`p.yaml:8:5: env name "1X" must match [A-Za-z_][A-Za-z0-9_]*`,
				"p.yaml:9:9: env OK must be a string, number or boolean, got a list",
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
			want: []string{"p.yaml:2:1: YAML syntax: did not find expected ',' or ']'"},
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

func TestLoad(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"agents/profiles.yaml": {Data: []byte("X1: {queue: x, vendor: amd, image_repo: r/x-rocm, runtime: docker}\n")},
		"bad.yaml":             {Data: []byte("X1: {queue: x}\n")},
	}
	s, err := Load(fsys, DefaultPath)
	if err != nil {
		t.Fatalf("Load() error = %v", err)
	}
	want := Profile{GPU: "X1", Queue: "x", Vendor: AMD, ImageRepo: "r/x-rocm", Runtime: Docker}
	if diff := cmp.Diff(lookup(t, s, "X1"), want); diff != "" || s.Path != DefaultPath {
		t.Errorf("Load() path %s, profile diff (-got +want):\n%s", s.Path, diff)
	}
	if _, err := Load(fsys, "bad.yaml"); err == nil || !strings.Contains(err.Error(), "bad.yaml:1:1: profile X1 needs vendor") {
		t.Errorf("Load(bad) error = %v", err)
	}
	if _, err := Load(fsys, "missing.yaml"); err == nil || !strings.Contains(err.Error(), "read agent profiles: ") {
		t.Errorf("Load(missing) error = %v", err)
	}
	for _, load := range []func() (*Set, error){
		func() (*Set, error) { return Load(fsys, "") },
		func() (*Set, error) { return LoadFile("") },
		func() (*Set, error) { return LoadFile("profiles.yaml") },
	} {
		s, err := load()
		if err != nil {
			t.Fatalf("loading the default profiles: %v", err)
		}
		if diff := cmp.Diff(s.Names(), defaultSet(t).Names()); diff != "" {
			t.Errorf("default profiles diff (-got +want):\n%s", diff)
		}
	}
	if _, err := LoadFile("testdata/none.yaml"); err == nil {
		t.Error("LoadFile(missing) error = nil")
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
