// Package agents knows where and how each GPU kind runs: its Buildkite queue,
// vLLM image repository, server runtime, k8s resources and docker flags. The
// data lives in profiles.yaml beside this file, which the binaries read
// from the checkout they run in.
package agents

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/benchkite/benchkite/internal/envname"
	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// DefaultPath is where the profiles live in a checkout.
const DefaultPath = "agents/profiles.yaml"

// defaultProfiles is the file as this package was built, for tests; the
// binaries read the checkout's copy (LoadFile), never this one.
//
//go:embed profiles.yaml
var defaultProfiles []byte

// Vendor decides GPU resources and device flags.
type Vendor string

const (
	AMD    Vendor = "amd"
	NVIDIA Vendor = "nvidia"
	Intel  Vendor = "intel"
)

// Platform is the software stack a vendor's vLLM images are built for.
type Platform string

const (
	CUDA Platform = "CUDA"
	ROCm Platform = "ROCm"
	XPU  Platform = "XPU"
)

// Platform is the image platform the profile's GPUs need.
func (p Profile) Platform() Platform {
	switch p.Vendor {
	case AMD:
		return ROCm
	case Intel:
		return XPU
	}
	return CUDA
}

// Runtime is how the vLLM server is started.
type Runtime string

const (
	// Native: the job runs inside the vLLM image (a k8s pod); the runner
	// starts `vllm serve` directly.
	Native Runtime = "native"
	// Docker: the runner starts the image with `docker run`.
	Docker Runtime = "docker"
)

// Profile is one GPU kind.
type Profile struct {
	GPU       string
	Queue     string
	Emoji     string
	Vendor    Vendor
	ImageRepo string
	Runtime   Runtime
	HFHome    string
	// ModelCacheNote says why the model cache is where it is; a cache that
	// does not persist must say why (the profile file requires it).
	ModelCacheNote string
	// Env is the server's environment defaults; recipes override them.
	Env []EnvVar
	// ImageRewrite, if set, changes the prefix of the image the runtime
	// pulls (a cluster's pull-through cache); see ImageFor.
	ImageRewrite *ImageRewrite
	// K8s is the pod a native profile's job runs in; nil for docker.
	K8s *K8s
	// Tags are agent tags the step asks for besides the queue.
	Tags map[string]string `json:",omitempty"`
	// Docker is a docker profile's container variant; nil for the default.
	Docker *DockerVariant `json:",omitempty"`
	// GPUHourPrice is what one GPU-hour of this kind costs, in whatever
	// currency the reader uses; 0 when unset: GPU time is then reported
	// without a cost.
	GPUHourPrice float64
	// BisectGPUHours is the GPU time one automatic bisect of a recipe on
	// this kind may take; 0 (unset) turns automatic bisection off.
	BisectGPUHours float64
}

// EnvVar is one environment variable, kept in file order.
type EnvVar struct {
	Name  string
	Value string
}

// Set is every profile of one file.
type Set struct {
	Path     string
	profiles map[string]Profile
	names    []string
}

// Env reads the build environment; tests pass a map.
type Env func(string) string

// Default returns the profiles this package was built with, for tests.
func Default() (*Set, error) {
	return Parse(DefaultPath, defaultProfiles)
}

// LoadFile reads a profile file from disk; "" is DefaultPath, relative to
// the working directory.
func LoadFile(path string) (*Set, error) {
	if path == "" {
		path = DefaultPath
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read agent profiles: %w", err)
	}
	return Parse(path, src)
}

var (
	gpuNameRE = regexp.MustCompile(`^[A-Z][A-Z0-9]*$`)
	queueRE   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	// repoRE: lower-case path components, the first one a registry host
	// that may carry a port (registry.local:5000/vllm/vllm-openai).
	repoRE    = regexp.MustCompile(`^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+/[a-z0-9]+(?:[._-][a-z0-9]+)*)?(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// profileLoader decodes one profile file.
type profileLoader struct {
	d *strictyaml.Decoder
}

// Parse decodes profiles strictly; the error is strictyaml.Problems.
func Parse(path string, src []byte) (*Set, error) {
	d, root := strictyaml.Parse(path, src)
	l := &profileLoader{d: d}
	set := &Set{Path: path, profiles: map[string]Profile{}}
	if root != nil {
		d.Pairs(root, "the profile file", func(k, v *yaml.Node) {
			gpu := k.Value
			if !gpuNameRE.MatchString(gpu) {
				d.Errorf(k, "GPU name %q must be upper case letters and digits, like MI355X", gpu)
				return
			}
			if p, ok := l.profile(k, v, gpu); ok {
				set.profiles[gpu] = p
				set.names = append(set.names, gpu)
			}
		})
	}
	if errs := d.Problems.Errors(); len(errs) > 0 {
		errs.Sort()
		return nil, errs
	}
	if len(set.names) == 0 {
		return nil, strictyaml.Problems{{File: path, Line: 1, Col: 1, Msg: "no GPU profiles defined"}}
	}
	sort.Strings(set.names)
	return set, nil
}

// env decodes an env mapping. The server's env (server set) goes into the
// server with the recipe's, which the runner checks by one rule
// (internal/envname): a name it would refuse is refused here already.
func (l *profileLoader) env(n *yaml.Node, what string, server bool) []EnvVar {
	d := l.d
	var out []EnvVar
	d.Pairs(n, what, func(k, v *yaml.Node) {
		if !envNameRE.MatchString(k.Value) {
			d.Errorf(k, "env name %q must match [A-Za-z_][A-Za-z0-9_]*", k.Value)
			return
		}
		if why := envname.Reason(k.Value); server && why != "" {
			d.Errorf(k, "env cannot set %s: %s", k.Value, why)
			return
		}
		if val, ok := d.Scalar(v, "env "+k.Value); ok {
			out = append(out, EnvVar{Name: k.Value, Value: val})
		}
	})
	return out
}

func (l *profileLoader) profile(k, v *yaml.Node, gpu string) (Profile, bool) {
	d := l.d
	p := Profile{GPU: gpu, Runtime: Native}
	var k8sNode, dockerNode *yaml.Node
	ok := d.Fields(v, "profile "+gpu, []strictyaml.Field{
		{Name: "queue", Decode: func(_, n *yaml.Node) {
			if s, ok := d.String(n, "queue"); ok {
				if !queueRE.MatchString(s) {
					d.Errorf(n, "queue %q: use letters, digits, '_', '.' and '-'", s)
				}
				p.Queue = s
			}
		}},
		{Name: "emoji", Decode: func(_, n *yaml.Node) { p.Emoji, _ = d.String(n, "emoji") }},
		{Name: "vendor", Decode: func(_, n *yaml.Node) {
			if s, ok := d.String(n, "vendor"); ok {
				// Kept even when wrong, so "needs vendor" is not
				// reported on top.
				p.Vendor = Vendor(s)
				if p.Vendor != AMD && p.Vendor != NVIDIA && p.Vendor != Intel {
					d.Errorf(n, "vendor must be amd, nvidia or intel, got %q", s)
				}
			}
		}},
		{Name: "image_repo", Decode: func(_, n *yaml.Node) {
			if s, ok := d.String(n, "image_repo"); ok {
				if !repoRE.MatchString(s) {
					d.Errorf(n, "image_repo %q is not an image repository name (no tag)", s)
				}
				p.ImageRepo = s
			}
		}},
		{Name: "image_rewrite", Decode: func(_, n *yaml.Node) { p.ImageRewrite = l.imageRewrite(n, gpu) }},
		{Name: "runtime", Decode: func(_, n *yaml.Node) {
			if s, ok := d.String(n, "runtime"); ok {
				switch Runtime(s) {
				case Native, Docker:
					p.Runtime = Runtime(s)
				default:
					d.Errorf(n, "runtime must be native or docker, got %q", s)
				}
			}
		}},
		{Name: "hf_home", Decode: func(_, n *yaml.Node) {
			if s, ok := d.String(n, "hf_home"); ok {
				if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, " \t\n:") {
					d.Errorf(n, "hf_home must be an absolute path without spaces or ':', got %q", s)
				}
				p.HFHome = s
			}
		}},
		{Name: "model_cache_note", Decode: func(_, n *yaml.Node) {
			if s, ok := d.String(n, "model_cache_note"); ok {
				p.ModelCacheNote = strings.TrimSpace(s)
			}
		}},
		{Name: "env", Decode: func(_, n *yaml.Node) { p.Env = l.env(n, "env", true) }},
		{Name: "agent_tags", Decode: func(_, n *yaml.Node) { p.Tags = l.agentTags(n, gpu) }},
		{Name: "docker", Decode: func(key, n *yaml.Node) {
			dockerNode = key
			p.Docker = l.docker(n, gpu)
		}},
		{Name: "gpu_hour_price", Decode: func(_, n *yaml.Node) { p.GPUHourPrice, _ = d.Float(n, "gpu_hour_price", 0, 1e6) }},
		{Name: "bisect_gpu_hours", Decode: func(_, n *yaml.Node) { p.BisectGPUHours, _ = d.Float(n, "bisect_gpu_hours", 0, 1e6) }},
		{Name: "k8s", Decode: func(key, n *yaml.Node) {
			k8sNode = key
			p.K8s = l.decodeK8s(n, gpu)
		}},
	})
	if !ok {
		return p, false
	}
	l.complete(k, &p, k8sNode, dockerNode)
	return p, true
}

// complete checks a decoded profile as a whole: the fields it needs, and
// a k8s or docker block only for its runtime. A native profile without a
// k8s block gets an empty one.
func (l *profileLoader) complete(k *yaml.Node, p *Profile, k8sNode, dockerNode *yaml.Node) {
	d, gpu := l.d, p.GPU
	for _, req := range []struct{ name, val string }{{"queue", p.Queue}, {"vendor", string(p.Vendor)}, {"image_repo", p.ImageRepo}} {
		if req.val == "" {
			d.Errorf(k, "profile %s needs %s", gpu, req.name)
		}
	}
	switch {
	case p.Runtime == Docker && k8sNode != nil:
		d.Errorf(k8sNode, "profile %s runs docker, where no pod is made; k8s applies to runtime native only", gpu)
	case p.Runtime == Native && dockerNode != nil:
		d.Errorf(dockerNode, "profile %s runs native, in its own pod; docker applies to runtime docker only", gpu)
	case p.Runtime == Native && p.K8s == nil:
		p.K8s = &K8s{}
	}
}

// Names lists the known GPUs, sorted.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// Lookup finds a GPU's profile. GPU names are matched case-insensitively,
// since recipes in the wild write both "MI355X" and "mi355x".
func (s *Set) Lookup(gpu string) (Profile, bool) {
	if p, ok := s.profiles[gpu]; ok {
		return p, true
	}
	p, ok := s.profiles[strings.ToUpper(gpu)]
	return p, ok
}

// Equal reports whether two profiles would run jobs identically; the PR
// selection uses it to find profiles a change touched.
func (p Profile) Equal(q Profile) bool {
	a, _ := json.Marshal(p)
	b, _ := json.Marshal(q)
	return string(a) == string(b)
}

// Device is the lower-case device name used in result metadata.
func (p Profile) Device() string { return strings.ToLower(p.GPU) }

// QueueFor returns the Buildkite queue and what decided it: the profile, or a
// {GPU}_QUEUE variable in env.
func (p Profile) QueueFor(env Env) (queue, source string) {
	name := p.GPU + "_QUEUE"
	if v := strings.TrimSpace(env(name)); v != "" {
		return v, name
	}
	return p.Queue, "profile"
}

// GPUResource is the k8s extended resource that requests this vendor's GPUs.
func (p Profile) GPUResource() string {
	switch p.Vendor {
	case AMD:
		return "amd.com/gpu"
	case Intel:
		return "gpu.intel.com/i915"
	}
	return "nvidia.com/gpu"
}

// DockerDeviceFlags are the `docker run` flags that expose the GPUs.
func (p Profile) DockerDeviceFlags() []string {
	if p.Vendor == Intel {
		// Intel's GPUs are render nodes; the driver's level-zero stack
		// finds them there.
		return []string{"--device=/dev/dri:/dev/dri"}
	}
	if p.Vendor == AMD {
		// ROCm needs the kernel fusion driver and render nodes, membership of
		// the video group, and a seccomp profile that allows its ioctls.
		return []string{"--device=/dev/kfd", "--device=/dev/dri", "--group-add=video", "--security-opt=seccomp=unconfined"}
	}
	return []string{"--gpus=all"}
}

// ModelCode says where the processes that run model code (a served
// model's repository code under --trust-remote-code, its tokenizer's)
// run on this profile, and what they can read there. It is what the
// runner does (runner/internal/confine), said per runtime.
func (p Profile) ModelCode() string {
	const confined = "in user and mount namespaces of their own (root inside, the runner's uid outside): " +
		"no other process's environ or memory (the agent's bootstrap with the job's tokens, the runner) is readable there, " +
		"whatever capabilities the job has; the tools directory is read-only; each holds HF_TOKEN where it downloads"
	if p.Runtime == Docker {
		s := "vllm serve and vllm bench run in the server's container, in its own PID namespace, where no host process is visible; " +
			"lm_eval and the BFCL driver run on the host " + confined
		if p.Docker != nil && p.Docker.Privileged {
			s += "; the container is privileged: code in it has the host's devices and every capability, and can reach the host"
		}
		return s
	}
	return "vllm serve, vllm bench, lm_eval and the BFCL driver run " + confined
}
