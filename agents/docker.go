package agents

import (
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// DockerVariant is how a docker profile's server container differs from the
// default (published loopback port, the image's own entrypoint).
type DockerVariant struct {
	// HostNetwork: the container shares the host's network; the server's
	// port is a port of the host, so each job takes its own and the
	// server binds the host's loopback.
	HostNetwork bool
	// Privileged: every device and capability of the host (see README:
	// Intel's GPU driver needs it for its ioctls and device discovery).
	Privileged bool
	// Bashrc: the server starts as `bash -ic 'exec vllm serve "$@"'`, so
	// the image's /root/.bashrc (oneAPI's environment) is sourced first.
	Bashrc bool
	// BindIfPresent are host paths mounted onto themselves when they
	// exist on the host, such as /dev/dri/by-path.
	BindIfPresent []string
	// PassEnv are host variables the container gets when the job has
	// them, such as ZE_AFFINITY_MASK (which GPUs the job may use).
	PassEnv []string
}

// agentTagRE: Buildkite agent tag names.
var agentTagRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (l *profileLoader) agentTags(n *yaml.Node, gpu string) map[string]string {
	d := l.d
	tags := map[string]string{}
	d.Pairs(n, "agent_tags", func(k, v *yaml.Node) {
		switch {
		case !agentTagRE.MatchString(k.Value):
			d.Errorf(k, "agent tag %q: use letters, digits, '_', '.' and '-'", k.Value)
			return
		case k.Value == "queue":
			d.Errorf(k, "profile %s: set the queue with queue, not agent_tags", gpu)
			return
		}
		if s, ok := d.Scalar(v, "agent tag "+k.Value); ok {
			if s == "" || strings.ContainsAny(s, "\n\x00") {
				d.Errorf(v, "agent tag %s: one line of text", k.Value)
				return
			}
			tags[k.Value] = s
		}
	})
	return tags
}

func (l *profileLoader) docker(n *yaml.Node, gpu string) *DockerVariant {
	d := l.d
	o := &DockerVariant{}
	paths := func(v *yaml.Node, what string) []string {
		var out []string
		d.Items(v, what, func(_ int, item *yaml.Node) {
			if s, ok := d.String(item, what+" entry"); ok {
				if !path.IsAbs(s) || path.Clean(s) != s || strings.ContainsAny(s, " \t\n:,") {
					d.Errorf(item, "%s %q: an absolute clean path without spaces, ':' or ','", what, s)
					return
				}
				out = append(out, s)
			}
		})
		return out
	}
	d.Fields(n, "profile "+gpu+" docker", []strictyaml.Field{
		{Name: "host_network", Decode: func(_, v *yaml.Node) { o.HostNetwork, _ = d.Bool(v, "docker.host_network") }},
		{Name: "privileged", Decode: func(_, v *yaml.Node) { o.Privileged, _ = d.Bool(v, "docker.privileged") }},
		{Name: "bashrc", Decode: func(_, v *yaml.Node) { o.Bashrc, _ = d.Bool(v, "docker.bashrc") }},
		{Name: "bind_if_present", Decode: func(_, v *yaml.Node) { o.BindIfPresent = paths(v, "docker.bind_if_present") }},
		{Name: "pass_env", Decode: func(_, v *yaml.Node) {
			d.Items(v, "docker.pass_env", func(_ int, item *yaml.Node) {
				if s, ok := d.String(item, "docker.pass_env entry"); ok {
					if !envNameRE.MatchString(s) {
						d.Errorf(item, "docker.pass_env %q is not a variable name", s)
						return
					}
					o.PassEnv = append(o.PassEnv, s)
				}
			})
		}},
	})
	return o
}

// AgentTags are the step's agent tags: the queue and the profile's own.
func (p Profile) AgentTags(queue string) map[string]string {
	tags := map[string]string{"queue": queue}
	for k, v := range p.Tags {
		tags[k] = v
	}
	return tags
}

// TagNames lists the profile's extra agent tags, sorted.
func (p Profile) TagNames() []string {
	var names []string
	for k := range p.Tags {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// HostNetwork says whether the server's port is a port of the host: a
// native pod on the node's network or a docker container on the host's.
func (p Profile) HostNetwork() bool {
	if p.K8s != nil && p.K8s.HostNetwork {
		return true
	}
	return p.Docker != nil && p.Docker.HostNetwork
}
