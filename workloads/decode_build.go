package workloads

import (
	"path"
	"regexp"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/envname"
	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// Build is vllm.build: a Dockerfile the runner builds into vllm.image on
// a docker host before the run.
type Build struct {
	// Dockerfile and Context are slash paths relative to the checkout,
	// clean and inside it; Context is "." when the recipe leaves it out.
	Dockerfile string
	Context    string
	// Args are --build-arg values in file order.
	Args []BuildArg
}

// BuildArg is one build argument. FromEnv: the recipe gave no value and
// docker takes it from the job's environment, as `--build-arg NAME`
// does; a secret is passed that way, never written in a recipe.
type BuildArg struct {
	Name    string
	Value   string
	FromEnv bool
}

var buildArgRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (l *loader) decodeBuild(n *yaml.Node) *Build {
	d := l.d
	l.nodes.build = n
	b := &Build{Context: "."}
	var hasDockerfile bool
	d.Fields(n, "vllm.build", []strictyaml.Field{
		{Name: "dockerfile", Decode: func(_, v *yaml.Node) {
			hasDockerfile = true
			if s, ok := l.checkoutPath(v, "vllm.build.dockerfile"); ok {
				b.Dockerfile = s
			}
		}},
		{Name: "context", Decode: func(_, v *yaml.Node) {
			if s, ok := l.checkoutPath(v, "vllm.build.context"); ok {
				b.Context = s
			}
		}},
		{Name: "args", Decode: func(_, v *yaml.Node) {
			d.Pairs(v, "vllm.build.args", func(k, av *yaml.Node) {
				if !buildArgRE.MatchString(k.Value) {
					d.Errorf(k, "build arg name %q must match [A-Za-z_][A-Za-z0-9_]*", k.Value)
					return
				}
				if why := envname.BuildArgReason(k.Value); why != "" {
					d.Errorf(k, "build arg %s may not be passed: %s", k.Value, why)
					return
				}
				if av.Tag == "!!null" {
					b.Args = append(b.Args, BuildArg{Name: k.Value, FromEnv: true})
					return
				}
				s, ok := d.Scalar(av, "vllm.build.args."+k.Value)
				if !ok {
					return
				}
				if strings.ContainsAny(s, "\x00\n") {
					d.Errorf(av, "build arg %s: one line of text, no NUL", k.Value)
					return
				}
				b.Args = append(b.Args, BuildArg{Name: k.Value, Value: s})
			})
		}},
	})
	if !hasDockerfile && n.Kind == yaml.MappingNode {
		d.Errorf(n, "vllm.build needs dockerfile")
	}
	return b
}

// checkoutPath reads a path that must stay inside the checkout: relative,
// clean, no "..". The runner checks again, with symlinks resolved, before
// it builds.
func (l *loader) checkoutPath(n *yaml.Node, what string) (string, bool) {
	s, ok := l.d.String(n, what)
	if !ok {
		return "", false
	}
	switch {
	case s == "" || strings.ContainsAny(s, "\x00\n\\"):
		l.d.Errorf(n, "%s %q: a relative slash path inside the checkout", what, s)
	case path.IsAbs(s):
		l.d.Errorf(n, "%s %q: absolute; paths are relative to the checkout and may not leave it", what, s)
	case path.Clean(s) == ".." || strings.HasPrefix(path.Clean(s), "../"):
		l.d.Errorf(n, "%s %q leaves the checkout", what, s)
	case strings.HasPrefix(s, "-"):
		l.d.Errorf(n, "%s %q starts with '-': docker would read it as a flag", what, s)
	default:
		return path.Clean(s), true
	}
	return "", false
}

// checkBuild: a build needs a docker host, where the image is built and
// run, and an explicit tag for the image it makes.
func (l *loader) checkBuild(r *Recipe) {
	b, at := r.VLLM.Build, l.nodes.build
	if b == nil || at == nil {
		return
	}
	if p, ok := l.profiles.Lookup(r.GPU); ok && p.Runtime != agents.Docker {
		l.d.Errorf(at, "vllm.build needs a docker host; %s runs %s, where the job is the image's own pod", p.GPU, p.Runtime)
	}
	if r.VLLM.Image == "" {
		l.d.Errorf(at, "vllm.build needs vllm.image: the tag the built image gets, such as vllm-local:my-branch")
		return
	}
	ref, err := ParseImageRef(r.VLLM.Image)
	if err != nil {
		return // reported at vllm.image
	}
	if ref.Tag == "" || ref.Digest != "" {
		l.d.Errorf(l.nodes.image, "vllm.image %q: a built image needs an explicit tag and no digest (the build makes the digest)", r.VLLM.Image)
	}
}
