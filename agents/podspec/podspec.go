// Package podspec builds the Kubernetes pod a native GPU job runs in, from
// a profile's cluster facts, as the kubernetes plugin of agent-stack-k8s
// takes it. It is its own package so that only the generator links the
// Kubernetes API types; the runner never needs them.
package podspec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/agents"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
	Pod   corev1.PodSpec
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
	c := corev1.Container{
		Name:  k.Container(),
		Image: job.Image,
		Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceName(p.GPUResource()): *resource.NewQuantity(int64(job.NumGPUs), resource.DecimalSI)},
		},
		VolumeMounts: []corev1.VolumeMount{{Name: ShmVolume, MountPath: "/dev/shm"}},
	}
	pod := corev1.PodSpec{
		// Shared memory for NCCL/RCCL: the container runtime's default
		// /dev/shm is 64 MiB.
		Volumes: []corev1.Volume{{Name: ShmVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}},
	}
	if k.RuntimeClassName != "" {
		pod.RuntimeClassName = &k.RuntimeClassName
	}
	if k.HostNetwork {
		pod.HostNetwork = true
		// Without it a host-network pod resolves with the node's DNS and
		// cannot reach cluster services.
		pod.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	for _, s := range k.ImagePullSecrets {
		pod.ImagePullSecrets = append(pod.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	if k.SeccompProfile != "" || len(k.Capabilities) > 0 {
		sc := &corev1.SecurityContext{}
		if k.SeccompProfile != "" {
			sc.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileType(k.SeccompProfile)}
		}
		if len(k.Capabilities) > 0 {
			sc.Capabilities = &corev1.Capabilities{}
			for _, cap := range k.Capabilities {
				sc.Capabilities.Add = append(sc.Capabilities.Add, corev1.Capability(cap))
			}
		}
		c.SecurityContext = sc
	}
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	for _, hp := range k.HostPaths {
		name := HostPathVolume(hp)
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: hp, Type: &dirOrCreate}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: hp})
	}
	raw, source, err := p.HFCacheVolume(env)
	if err != nil {
		return Spec{}, err
	}
	if raw != nil {
		vs, err := volumeSource(raw)
		if err != nil {
			where := source
			if source == "profile" && k.HFCacheVolumeAt != "" {
				where = k.HFCacheVolumeAt + ": profile " + p.GPU + " k8s.hf_cache_volume"
			}
			return Spec{}, fmt.Errorf("%s: %w", where, err)
		}
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: HFCacheVolume, VolumeSource: vs})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: HFCacheVolume, MountPath: p.HFCacheDir()})
	}
	for _, e := range k.Env {
		c.Env = append(c.Env, corev1.EnvVar{Name: e.Name, Value: e.Value})
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: "HF_HOME", Value: p.HFCacheDir()})
	if k.ToolsDir != "" {
		c.Env = append(c.Env, corev1.EnvVar{Name: "BENCHKITE_TOOLS_DIR", Value: k.ToolsDir})
	}
	if s := k.HFTokenSecret; s != nil {
		name := s.Name
		if o := strings.TrimSpace(env("HF_TOKEN_K8S_SECRET")); o != "" {
			name = o
		}
		// Not optional: a pod whose secret is missing fails to start and
		// says so, rather than running gated models without a token.
		c.Env = append(c.Env, corev1.EnvVar{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: s.Key},
		}})
	}
	pod.Containers = []corev1.Container{c}
	return Spec{Field: k.Field(), Pod: pod}, nil
}

// HostPathVolume names the volume of a host path: /mnt/shared is
// host-mnt-shared.
func HostPathVolume(path string) string {
	return "host" + strings.ReplaceAll(strings.ToLower(path), "/", "-")
}

// volumeSource decodes a volume source as Kubernetes would, except that an
// unknown field is an error rather than dropped: a typo'd claim name field
// must not turn into an emptyDir. It must hold exactly one source.
func volumeSource(raw json.RawMessage) (corev1.VolumeSource, error) {
	var vs corev1.VolumeSource
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&vs); err != nil {
		return vs, fmt.Errorf("not a k8s volume source: %w", err)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil || len(keys) != 1 {
		return vs, fmt.Errorf("a volume source holds exactly one source, got %s", raw)
	}
	for k, v := range keys {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return vs, fmt.Errorf("volume source %s is null", k)
		}
	}
	return vs, nil
}
