package agents

import (
	"encoding/json"
	"fmt"
	"strings"
)

// HFCacheDir is where the Hugging Face cache lives inside the job.
func (p Profile) HFCacheDir() string {
	if p.HFHome != "" {
		return p.HFHome
	}
	return "/root/.cache/huggingface"
}

// ModelCache is where a job's model downloads land and whether the next
// job on the same node finds them.
type ModelCache struct {
	Dir        string `json:"dir"`     // HF_HOME inside the job
	Backing    string `json:"backing"` // what holds it: a host path, a PVC, an emptyDir, a docker volume
	Persistent bool   `json:"persistent"`
	Note       string `json:"note,omitempty"` // the profile's model_cache_note
}

// ModelCache says where the model cache lives for this profile and build
// environment, and whether it outlives the job.
func (p Profile) ModelCache(env Env) (ModelCache, error) {
	mc := ModelCache{Dir: p.HFCacheDir(), Note: p.ModelCacheNote}
	if p.Runtime == Docker {
		if p.HFHome != "" {
			mc.Backing, mc.Persistent = "host directory "+p.HFHome+" mounted at the same path", true
		} else {
			mc.Backing, mc.Persistent = "docker volume benchkite-hf-cache on the host", true
		}
		return mc, nil
	}
	vol, from, err := p.HFCacheVolume(env)
	if err != nil {
		return mc, err
	}
	switch {
	case vol == nil:
		mc.Backing, mc.Persistent = "node-local "+from+" (hostPath)", true
	default:
		var v map[string]json.RawMessage
		_ = json.Unmarshal(vol, &v)
		for kind := range v {
			mc.Backing = kind + " (from " + from + ")"
			mc.Persistent = kind != "emptyDir"
		}
	}
	return mc, nil
}

// HFCacheVolume is the k8s volume source backing the HF cache in a pod, as
// JSON, and what decided it: {GPU}_HF_CACHE_VOLUME, else the profile's
// k8s.hf_cache_volume, else none when the HF cache lies inside one of the
// profile's host paths (the node directory already holds it), else an
// emptyDir, which is reclaimed with the pod and never fills the node's disk.
// A nil source means no volume of its own.
func (p Profile) HFCacheVolume(env Env) (json.RawMessage, string, error) {
	name := p.GPU + "_HF_CACHE_VOLUME"
	if raw := strings.TrimSpace(env(name)); raw != "" {
		var v map[string]json.RawMessage
		if err := json.Unmarshal([]byte(raw), &v); err != nil {
			return nil, name, fmt.Errorf("%s must be a JSON object holding a k8s volume source: %w", name, err)
		}
		if len(v) != 1 {
			return nil, name, fmt.Errorf("%s must hold exactly one volume source (such as persistentVolumeClaim or hostPath), got %d keys", name, len(v))
		}
		if hp, ok := v["hostPath"]; ok {
			// A build variable must not mount the node's system.
			var src struct {
				Path string `json:"path"`
			}
			if err := json.Unmarshal(hp, &src); err != nil {
				return nil, name, fmt.Errorf("%s hostPath must be an object with a path: %w", name, err)
			}
			// No path at all is the pod builder's strict decoding's to name.
			if err := checkHostDir(src.Path); src.Path != "" && err != nil {
				return nil, name, fmt.Errorf("%s hostPath.path %w", name, err)
			}
		}
		return json.RawMessage(raw), name, nil
	}
	var k K8s
	if p.K8s != nil {
		k = *p.K8s
	}
	if len(k.HFCacheVolume) > 0 {
		return k.HFCacheVolume, "profile", nil
	}
	dir := p.HFCacheDir()
	for _, hp := range k.HostPaths {
		if dir == hp || strings.HasPrefix(dir, hp+"/") {
			return nil, "host path " + hp, nil
		}
	}
	return json.RawMessage(`{"emptyDir":{}}`), "default", nil
}

// ToolsDirName is the folder inside a persistent model cache that holds
// the tools' venvs when the profile names no tools_dir.
const ToolsDirName = "benchkite-tools"

// ToolsPlace is where a job keeps the evaluation tools' venvs (one per
// lock hash under Dir) and whether the next job finds them.
type ToolsPlace struct {
	// Dir is BENCHKITE_TOOLS_DIR in a pod; empty: the runner's default,
	// under the job's $HOME.
	Dir        string
	Persistent bool
	// Why says what decided it, for `generator explain`.
	Why string
}

// Tools says where a native profile's pod keeps the tools: its
// k8s.tools_dir (a node path); else inside the model cache when that
// outlives the pod ({GPU}_HF_CACHE_VOLUME or k8s.hf_cache_volume naming a
// PVC or a hostPath), so a volume installs each lock once; else the pod's
// $HOME, installed again by every job. Docker profiles keep them in the
// agent host's home.
func (p Profile) Tools(env Env) (ToolsPlace, error) {
	if p.Runtime != Native {
		return ToolsPlace{Persistent: true, Why: "the agent host's home: installed once per host and lock"}, nil
	}
	if p.K8s != nil && p.K8s.ToolsDir != "" {
		return ToolsPlace{Dir: p.K8s.ToolsDir, Persistent: true, Why: "node path: installed once per node and lock"}, nil
	}
	mc, err := p.ModelCache(env)
	if err != nil {
		return ToolsPlace{}, err
	}
	if mc.Persistent {
		return ToolsPlace{Dir: mc.Dir + "/" + ToolsDirName, Persistent: true,
			Why: "inside the model cache, " + mc.Backing + ": installed once per volume and lock"}, nil
	}
	return ToolsPlace{Why: "the pod's home, installed again every job: the profile has no k8s.tools_dir and its model cache is an emptyDir; " +
		"a persistentVolumeClaim or hostPath in " + p.GPU + "_HF_CACHE_VOLUME would hold the tools too"}, nil
}
