package agents

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// The kubernetes plugin fields that carry a pod spec. agent-stack-k8s
// replaces its default pod with podSpec, and merges podSpecPatch into it
// (strategic merge, containers matched by name).
const (
	PodSpecField      = "podSpec"
	PodSpecPatchField = "podSpecPatch"
)

// DefaultContainerName is the name agent-stack-k8s gives the container that
// runs the job's command; a podSpecPatch must use it to reach that container.
const DefaultContainerName = "container-0"

// K8s is what a native profile's cluster needs in the pod: facts of the
// cluster, not of a recipe. The zero value is a plain podSpec.
type K8s struct {
	// PodSpecField is PodSpecField or PodSpecPatchField.
	PodSpecField string
	// ContainerName names the job's container; DefaultContainerName if empty.
	ContainerName string
	// RuntimeClassName selects the container runtime, such as nvidia.
	RuntimeClassName string
	// HostNetwork puts the pod in the node's network namespace (with
	// dnsPolicy ClusterFirstWithHostNet): the server's port is a node port.
	HostNetwork bool
	// ImagePullSecrets are secret names for pulling the vLLM image.
	ImagePullSecrets []string
	// SeccompProfile is the container's seccomp profile type, if set.
	SeccompProfile string
	// Capabilities are added to the container, such as IPC_LOCK.
	Capabilities []string
	// HostPaths are node directories mounted at the same path
	// (DirectoryOrCreate).
	HostPaths []string
	// HFTokenSecret is the secret holding HF_TOKEN. Not optional in the pod:
	// a missing secret keeps the pod from starting, visibly.
	HFTokenSecret *SecretKey
	// HFCacheVolume is a k8s volume source for the HF cache, as JSON;
	// {GPU}_HF_CACHE_VOLUME overrides it.
	HFCacheVolume json.RawMessage
	// HFCacheVolumeAt is where HFCacheVolume is written (file:line:col), so
	// a volume source Kubernetes would reject is reported there.
	HFCacheVolumeAt string
	// ToolsDir is where the runner keeps the evaluation tools' venvs
	// (BENCHKITE_TOOLS_DIR in the pod), one per lock hash: inside a host
	// path, so a node installs each lock once. Unset, they go to the pod's
	// $HOME and every job installs them again.
	ToolsDir string
	// Env is set on the job's container, for every process in the pod.
	Env []EnvVar
}

// inHostPath says whether dir is one of the host paths or inside one.
func (k K8s) inHostPath(dir string) bool {
	for _, hp := range k.HostPaths {
		if dir == hp || strings.HasPrefix(dir, hp+"/") {
			return true
		}
	}
	return false
}

// SecretKey is one key of a k8s secret.
type SecretKey struct {
	Name string
	Key  string
}

// Container is the job container's name.
func (k K8s) Container() string {
	if k.ContainerName != "" {
		return k.ContainerName
	}
	return DefaultContainerName
}

// Field is the kubernetes plugin field the pod spec goes in.
func (k K8s) Field() string {
	if k.PodSpecField != "" {
		return k.PodSpecField
	}
	return PodSpecField
}

// ImageRewrite replaces an image reference's prefix, such as public.ecr.aws/
// by a cluster's pull-through cache.
type ImageRewrite struct {
	From string
	To   string
}

var (
	// DNS-1123 label: container names.
	dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// DNS-1123 subdomain: secret and runtime class names.
	dnsSubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	secretKeyRE    = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
	capabilityRE   = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	// A registry host with optional path, ending in '/'.
	imagePrefixRE = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*/$`)
)

func checkAbsPath(s string) error {
	if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, " \t\n:") || strings.Contains(s, "..") || s == "/" || strings.HasSuffix(s, "/") {
		return fmt.Errorf("must be an absolute directory without spaces, ':', '..' or a trailing '/', got %q", s)
	}
	return nil
}

// systemDirs are node directories no job may mount: the system's own
// files, the kernel's, and the runtimes' state (a job that mounts them
// owns the node).
var systemDirs = []string{"/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root",
	"/run", "/sbin", "/sys", "/usr", "/var/run", "/var/lib/docker", "/var/lib/containerd", "/var/lib/kubelet", "/var/log"}

// checkHostDir is checkAbsPath, and not a system directory, one inside
// it, or one holding it (/var holds /var/lib/kubelet).
func checkHostDir(s string) error {
	if err := checkAbsPath(s); err != nil {
		return err
	}
	for _, d := range systemDirs {
		if s == d || strings.HasPrefix(s, d+"/") || strings.HasPrefix(d, s+"/") {
			return fmt.Errorf("must not be a system directory, one inside it or one holding it (%s), got %q", d, s)
		}
	}
	return nil
}

func (l *profileLoader) decodeK8s(n *yaml.Node, gpu string) *K8s {
	d := l.d
	k := &K8s{}
	var toolsAt *yaml.Node
	what := "profile " + gpu + " k8s"
	d.Fields(n, what, []strictyaml.Field{
		{Name: "pod_spec", Decode: func(_, v *yaml.Node) {
			if s, ok := d.String(v, what+".pod_spec"); ok {
				if s != PodSpecField && s != PodSpecPatchField {
					d.Errorf(v, "%s.pod_spec must be %s (replace the controller's pod) or %s (merge into it), got %q", what, PodSpecField, PodSpecPatchField, s)
				}
				k.PodSpecField = s
			}
		}},
		l.matching(what, "container_name", dnsLabelRE, "a DNS label (lower case letters, digits and '-')", &k.ContainerName),
		l.matching(what, "runtime_class_name", dnsSubdomainRE, "a k8s object name", &k.RuntimeClassName),
		{Name: "host_network", Decode: func(_, v *yaml.Node) { k.HostNetwork, _ = d.Bool(v, what+".host_network") }},
		{Name: "image_pull_secrets", Decode: func(_, v *yaml.Node) {
			k.ImagePullSecrets = l.names(v, what, "image_pull_secrets", dnsSubdomainRE, "a k8s secret name")
		}},
		{Name: "seccomp_profile", Decode: func(_, v *yaml.Node) {
			if s, ok := d.String(v, what+".seccomp_profile"); ok {
				if s != "Unconfined" && s != "RuntimeDefault" {
					d.Errorf(v, "%s.seccomp_profile must be Unconfined or RuntimeDefault, got %q", what, s)
				}
				k.SeccompProfile = s
			}
		}},
		{Name: "capabilities", Decode: func(_, v *yaml.Node) {
			k.Capabilities = l.names(v, what, "capabilities", capabilityRE, "a capability name such as IPC_LOCK")
		}},
		{Name: "host_paths", Decode: func(_, v *yaml.Node) { k.HostPaths = l.hostPaths(v, what) }},
		{Name: "hf_token_secret", Decode: func(_, v *yaml.Node) {
			if sk := l.secretKey(v, what+".hf_token_secret"); sk != nil {
				k.HFTokenSecret = sk
			}
		}},
		{Name: "hf_cache_volume", Decode: func(_, v *yaml.Node) { l.hfCacheVolume(v, what, k) }},
		{Name: "env", Decode: func(_, v *yaml.Node) { k.Env = l.env(v, what+".env", false) }},
		{Name: "tools_dir", Decode: func(_, v *yaml.Node) {
			if s, ok := d.String(v, what+".tools_dir"); ok {
				if err := checkAbsPath(s); err != nil {
					d.Errorf(v, "%s.tools_dir %v", what, err)
					return
				}
				toolsAt = v
				k.ToolsDir = s
			}
		}},
	})
	if k.ToolsDir != "" && !k.inHostPath(k.ToolsDir) {
		d.Errorf(toolsAt, "%s.tools_dir %s lies in no host path: the venvs would go with the pod; add a host_paths entry holding it", what, k.ToolsDir)
	}
	return k
}

// matching is the field that decodes what's field, a string, into *into,
// naming it as not hint when re does not match it; the value is kept
// either way, so that the checks after it see what was written.
func (l *profileLoader) matching(what, field string, re *regexp.Regexp, hint string, into *string) strictyaml.Field {
	return strictyaml.Field{Name: field, Decode: func(_, v *yaml.Node) {
		if s, ok := l.d.String(v, what+"."+field); ok {
			if !re.MatchString(s) {
				l.d.Errorf(v, "%s.%s %q is not %s", what, field, s, hint)
			}
			*into = s
		}
	}}
}

// names decodes a list of distinct names, each matching re (hint says
// what it must be), under what's field.
func (l *profileLoader) names(v *yaml.Node, what, field string, re *regexp.Regexp, hint string) []string {
	d := l.d
	var out []string
	seen := map[string]bool{}
	d.Items(v, what+"."+field, func(_ int, item *yaml.Node) {
		s, ok := d.String(item, what+"."+field+" entry")
		if !ok {
			return
		}
		if !re.MatchString(s) {
			d.Errorf(item, "%s.%s: %q is not %s", what, field, s, hint)
			return
		}
		if seen[s] {
			d.Errorf(item, "%s.%s: %q is listed twice", what, field, s)
			return
		}
		seen[s] = true
		out = append(out, s)
	})
	return out
}

// hostPaths decodes host_paths: distinct host directories, none a
// system one, and not /dev/shm, which the pod always has.
func (l *profileLoader) hostPaths(v *yaml.Node, what string) []string {
	d := l.d
	var out []string
	seen := map[string]bool{}
	d.Items(v, what+".host_paths", func(_ int, item *yaml.Node) {
		s, ok := d.String(item, what+".host_paths entry")
		if !ok {
			return
		}
		if s == "/dev/shm" {
			d.Errorf(item, "%s.host_paths: /dev/shm is always a memory-backed emptyDir", what)
			return
		}
		if err := checkHostDir(s); err != nil {
			d.Errorf(item, "%s.host_paths entry %v", what, err)
			return
		}
		if seen[s] {
			d.Errorf(item, "%s.host_paths: %q is listed twice", what, s)
			return
		}
		seen[s] = true
		out = append(out, s)
	})
	return out
}

// secretKey decodes a secret's name and key at what; nil when it is not
// a mapping of known fields.
func (l *profileLoader) secretKey(v *yaml.Node, what string) *SecretKey {
	d := l.d
	sk := &SecretKey{}
	ok := d.Fields(v, what, []strictyaml.Field{
		l.matching(what, "name", dnsSubdomainRE, "a k8s secret name", &sk.Name),
		l.matching(what, "key", secretKeyRE, "a secret key (letters, digits, '-', '_' and '.')", &sk.Key),
	})
	if !ok {
		return nil
	}
	if sk.Name == "" || sk.Key == "" {
		d.Errorf(v, "%s needs name and key", what)
	}
	return sk
}

// hfCacheVolume decodes hf_cache_volume, one k8s volume source kept as
// JSON with where it was written.
func (l *profileLoader) hfCacheVolume(v *yaml.Node, what string, k *K8s) {
	d := l.d
	if v.Kind != yaml.MappingNode || len(v.Content) != 2 {
		d.Errorf(v, "%s.hf_cache_volume must hold exactly one k8s volume source, such as {persistentVolumeClaim: {claimName: hf-cache}}", what)
		return
	}
	val, ok := l.plain(v, what+".hf_cache_volume")
	if !ok {
		return
	}
	b, err := json.Marshal(val)
	if err != nil {
		d.Errorf(v, "%s.hf_cache_volume: %v", what, err)
		return
	}
	k.HFCacheVolume = b
	k.HFCacheVolumeAt = fmt.Sprintf("%s:%d:%d", d.File, v.Line, v.Column)
}

// plain turns a YAML value into JSON-ready data: mappings with string keys,
// lists, and typed scalars.
func (l *profileLoader) plain(n *yaml.Node, what string) (any, bool) {
	d := l.d
	switch n.Kind {
	case yaml.MappingNode:
		m := map[string]any{}
		good := true
		d.Pairs(n, what, func(k, v *yaml.Node) {
			val, ok := l.plain(v, what+"."+k.Value)
			good = good && ok
			m[k.Value] = val
		})
		return m, good
	case yaml.SequenceNode:
		list := []any{}
		good := true
		d.Items(n, what, func(_ int, item *yaml.Node) {
			val, ok := l.plain(item, what+" entry")
			good = good && ok
			list = append(list, val)
		})
		return list, good
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return n.Value, true
		case "!!bool":
			b, ok := d.Bool(n, what)
			return b, ok
		case "!!null":
			return nil, true
		case "!!int", "!!float":
			f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
			if err != nil {
				d.Errorf(n, "%s: %q is not a number JSON can hold", what, n.Value)
				return nil, false
			}
			return f, true
		}
	}
	d.Errorf(n, "%s: %s has no JSON form", what, strictyaml.Describe(n))
	return nil, false
}

func (l *profileLoader) imageRewrite(n *yaml.Node, gpu string) *ImageRewrite {
	d := l.d
	what := "profile " + gpu + " image_rewrite"
	rw := &ImageRewrite{}
	const hint = "an image reference prefix ending in '/', such as public.ecr.aws/"
	ok := d.Fields(n, what, []strictyaml.Field{
		l.matching(what, "from", imagePrefixRE, hint, &rw.From),
		l.matching(what, "to", imagePrefixRE, hint, &rw.To),
	})
	if !ok {
		return nil
	}
	if rw.From == "" || rw.To == "" {
		d.Errorf(n, "%s needs from and to", what)
	}
	return rw
}

// ImageFor is the reference the runtime pulls for image: image with the
// profile's rewrite applied, or the rule in {GPU}_IMAGE_REWRITE ("FROM=TO",
// or "none" to pull image as named). source says which rule applied: "" when
// none did.
func (p Profile) ImageFor(image string, env Env) (ref, source string, err error) {
	name := p.GPU + "_IMAGE_REWRITE"
	rw, source := p.ImageRewrite, "profile"
	if raw := strings.TrimSpace(env(name)); raw != "" {
		source = name
		if raw == "none" {
			return image, "", nil
		}
		from, to, ok := strings.Cut(raw, "=")
		if !ok || !imagePrefixRE.MatchString(from) || !imagePrefixRE.MatchString(to) {
			return "", name, fmt.Errorf("%s must be FROM=TO with two image reference prefixes ending in '/' (such as public.ecr.aws/=registry.example/cache/), or none; got %q", name, raw)
		}
		rw = &ImageRewrite{From: from, To: to}
	}
	if rw == nil || !strings.HasPrefix(image, rw.From) {
		return image, "", nil
	}
	return rw.To + strings.TrimPrefix(image, rw.From), source, nil
}

// DockerRunFlags are the `docker run` flags a server container needs on
// this profile's hosts: the host's IPC namespace (NCCL/RCCL shared memory),
// an open-file limit that a large model's shards and sockets fit in, and
// the GPU device flags; then the profile's variant: the host's network,
// privileges.
func (p Profile) DockerRunFlags() []string {
	flags := append([]string{"--ipc=host", "--ulimit=nofile=65536:65536"}, p.DockerDeviceFlags()...)
	if p.Docker != nil {
		if p.Docker.HostNetwork {
			flags = append(flags, "--network=host")
		}
		if p.Docker.Privileged {
			flags = append(flags, "--privileged")
		}
	}
	return flags
}
