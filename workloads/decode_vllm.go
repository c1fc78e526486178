package workloads

import (
	"strings"

	"github.com/benchkite/benchkite/internal/envname"
	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

func (l *loader) decodeVLLM(n *yaml.Node, v *VLLM) {
	d := l.d
	var hasModel bool
	d.Fields(n, "vllm", []strictyaml.Field{
		{Name: "model", Decode: func(_, val *yaml.Node) {
			if s, ok := d.String(val, "vllm.model"); ok {
				hasModel = true
				switch {
				case !modelRE.MatchString(s) || strings.Contains(s, ".."):
					d.Errorf(val, "vllm.model %q must be a hub id (org/name) or a plain path: letters, digits, '_', '.', '-' and '/'", s)
				case strings.HasPrefix(s, "-"):
					d.Errorf(val, "vllm.model %q starts with '-': vllm serve would read it as a flag", s)
				}
				v.Model = s
			}
		}},
		{Name: "image", Decode: func(_, val *yaml.Node) {
			l.nodes.image = val
			if s, ok := d.String(val, "vllm.image"); ok {
				if err := checkImageRef(s); err != nil {
					d.Errorf(val, "vllm.image: %v", err)
				}
				v.Image = s
			}
		}},
		{Name: "env", Decode: func(_, val *yaml.Node) {
			d.Pairs(val, "vllm.env", func(k, ev *yaml.Node) {
				// The runner checks again by the same rule before the
				// server starts.
				if why := envname.Reason(k.Value); why != "" {
					d.Errorf(k, "vllm.env cannot set %s: %s", envname.Quote(k.Value), why)
					return
				}
				s, ok := d.Scalar(ev, "vllm.env."+k.Value)
				if !ok {
					return
				}
				if strings.ContainsRune(s, 0) {
					d.Errorf(ev, "env %s holds a NUL byte", k.Value)
					return
				}
				if k.Value == EngineReadyTimeoutEnv {
					l.nodes.engineReady = ev
				}
				v.Env = append(v.Env, EnvVar{Name: k.Value, Value: s})
			})
		}},
		{Name: "serve_args", Decode: func(_, val *yaml.Node) {
			if s, ok := d.String(val, "vllm.serve_args"); ok {
				l.serveArgs(val, s, v)
			} else {
				l.serveArgsUnread = true
			}
		}},
		{Name: "startup_timeout_s", Decode: func(k, val *yaml.Node) { l.decodeStartupTimeout(k, val, v) }},
		{Name: "startup_timeout", Decode: func(k, val *yaml.Node) { l.decodeStartupTimeout(k, val, v) }},
		{Name: "startup_regression", Decode: func(_, val *yaml.Node) { v.StartupRegression = l.decodeStartupRegression(val) }},
		{Name: "build", Decode: func(_, val *yaml.Node) { v.Build = l.decodeBuild(val) }},
	})
	if !hasModel && n.Kind == yaml.MappingNode {
		d.Errorf(n, "vllm needs model")
	}
	if v.Serve.TP == 0 {
		v.Serve.TP, v.Serve.DP, v.Serve.PP = 1, 1, 1
	}
	if v.Serve.ServedModelName == "" {
		v.Serve.ServedModelName = v.Model
	}
}
