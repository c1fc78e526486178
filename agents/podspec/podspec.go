// Package podspec builds the Kubernetes pod a native GPU job runs in, from
// a profile's cluster facts, as the kubernetes plugin of agent-stack-k8s
// takes it. The pod is written with the few Kubernetes shapes it needs
// (types.go) rather than k8s.io/api, whose modules would be most of what a
// fresh CPU agent downloads and compiles before the GPU steps are
// uploaded; the tests read every pod back strictly as k8s.io/api's
// v1.PodSpec, and a volume source from a profile or the build env is
// checked against the fields of Kubernetes' VolumeSource (volumesource.json).
package podspec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/agents"
)

// Volume names in the pod.
const (
	ShmVolume     = "dshm"
	HFCacheVolume = "hf-cache"
)

// Job is what a pod runs: the image (as pulled) and its GPUs.
type Job struct {
	Image   string
	NumGPUs int
}

// Spec is a pod spec and the plugin field it goes in (agents.PodSpecField or
// agents.PodSpecPatchField).
type Spec struct {
	Field string
	Pod   PodSpec
}

// Plugin is the kubernetes plugin's configuration: {Field: Pod}.
func (s Spec) Plugin() map[string]any { return map[string]any{s.Field: s.Pod} }

// Build makes the pod of a job on profile p. env supplies the overrides
// ({GPU}_HF_CACHE_VOLUME, HF_TOKEN_K8S_SECRET).
func Build(p agents.Profile, job Job, env agents.Env) (Spec, error) {
	if p.Runtime != agents.Native {
		return Spec{}, fmt.Errorf("profile %s runs %s: it has no pod", p.GPU, p.Runtime)
	}
	if job.NumGPUs < 1 {
		return Spec{}, fmt.Errorf("profile %s: a pod needs at least one GPU, got %d", p.GPU, job.NumGPUs)
	}
	var k agents.K8s
	if p.K8s != nil {
		k = *p.K8s
	}
	c := Container{
		Name:  k.Container(),
		Image: job.Image,
		Resources: Resources{
			Limits: map[string]string{p.GPUResource(): strconv.Itoa(job.NumGPUs)},
		},
		VolumeMounts: []VolumeMount{{Name: ShmVolume, MountPath: "/dev/shm"}},
	}
	pod := PodSpec{
		// Shared memory for NCCL/RCCL: the container runtime's default
		// /dev/shm is 64 MiB.
		Volumes: []Volume{{Name: ShmVolume, Source: emptyDir(mediumMemory)}},
	}
	if k.RuntimeClassName != "" {
		pod.RuntimeClassName = &k.RuntimeClassName
	}
	if k.HostNetwork {
		pod.HostNetwork = true
		// Without it a host-network pod resolves with the node's DNS and
		// cannot reach cluster services.
		pod.DNSPolicy = dnsClusterFirstWithHostNet
	}
	for _, s := range k.ImagePullSecrets {
		pod.ImagePullSecrets = append(pod.ImagePullSecrets, LocalObjectReference{Name: s})
	}
	c.SecurityContext = securityContext(k)
	for _, hp := range k.HostPaths {
		name := HostPathVolume(hp)
		pod.Volumes = append(pod.Volumes, Volume{Name: name, Source: hostPathDirOrCreate(hp)})
		c.VolumeMounts = append(c.VolumeMounts, VolumeMount{Name: name, MountPath: hp})
	}
	cache, err := hfCache(p, k, env)
	if err != nil {
		return Spec{}, err
	}
	if cache != nil {
		pod.Volumes = append(pod.Volumes, *cache)
		c.VolumeMounts = append(c.VolumeMounts, VolumeMount{Name: HFCacheVolume, MountPath: p.HFCacheDir()})
	}
	for _, e := range k.Env {
		c.Env = append(c.Env, EnvVar{Name: e.Name, Value: e.Value})
	}
	c.Env = append(c.Env, EnvVar{Name: "HF_HOME", Value: p.HFCacheDir()})
	tools, err := p.Tools(env)
	if err != nil {
		return Spec{}, err
	}
	if tools.Dir != "" {
		c.Env = append(c.Env, EnvVar{Name: "BENCHKITE_TOOLS_DIR", Value: tools.Dir})
	}
	if s := k.HFTokenSecret; s != nil {
		c.Env = append(c.Env, hfToken(*s, env))
	}
	pod.Containers = []Container{c}
	return Spec{Field: k.Field(), Pod: pod}, nil
}

// securityContext is the container's seccomp profile and added
// capabilities; nil when the profile sets neither.
func securityContext(k agents.K8s) *SecurityContext {
	if k.SeccompProfile == "" && len(k.Capabilities) == 0 {
		return nil
	}
	sc := &SecurityContext{}
	if k.SeccompProfile != "" {
		sc.SeccompProfile = &SeccompProfile{Type: k.SeccompProfile}
	}
	if len(k.Capabilities) > 0 {
		sc.Capabilities = &Capabilities{Add: append([]string(nil), k.Capabilities...)}
	}
	return sc
}

// hfCache is the model cache's volume, nil when there is none. A bad
// source is reported where it was written.
func hfCache(p agents.Profile, k agents.K8s, env agents.Env) (*Volume, error) {
	raw, source, err := p.HFCacheVolume(env)
	if err != nil || raw == nil {
		return nil, err
	}
	vs, err := volumeSource(raw)
	if err != nil {
		where := source
		if source == "profile" && k.HFCacheVolumeAt != "" {
			where = k.HFCacheVolumeAt + ": profile " + p.GPU + " k8s.hf_cache_volume"
		}
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	return &Volume{Name: HFCacheVolume, Source: vs}, nil
}

// hfToken is HF_TOKEN from the secret s (HF_TOKEN_K8S_SECRET names
// another). Not optional: a pod whose secret is missing fails to start
// and says so, rather than running gated models without a token.
func hfToken(s agents.SecretKey, env agents.Env) EnvVar {
	name := s.Name
	if o := strings.TrimSpace(env("HF_TOKEN_K8S_SECRET")); o != "" {
		name = o
	}
	return EnvVar{Name: "HF_TOKEN", ValueFrom: &EnvVarSource{
		SecretKeyRef: &SecretKeySelector{Name: name, Key: s.Key},
	}}
}

// HostPathVolume names the volume of a host path: /mnt/shared is
// host-mnt-shared.
func HostPathVolume(path string) string {
	return "host" + strings.ReplaceAll(strings.ToLower(path), "/", "-")
}
