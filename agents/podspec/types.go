package podspec

import (
	"bytes"
	"encoding/json"
)

// The shapes of k8s.io/api/core/v1 a pod here uses, with the same JSON
// names and omitempty rules and the fields in the same order, so a pod
// reads back as a v1.PodSpec field for field (the tests check it).

// PodSpec is v1.PodSpec.
type PodSpec struct {
	Volumes          []Volume               `json:"volumes,omitempty"`
	Containers       []Container            `json:"containers"`
	DNSPolicy        string                 `json:"dnsPolicy,omitempty"`
	HostNetwork      bool                   `json:"hostNetwork,omitempty"`
	ImagePullSecrets []LocalObjectReference `json:"imagePullSecrets,omitempty"`
	RuntimeClassName *string                `json:"runtimeClassName,omitempty"`
}

// dnsClusterFirstWithHostNet is the DNS policy a host-network pod needs to
// resolve cluster services.
const dnsClusterFirstWithHostNet = "ClusterFirstWithHostNet"

// Container is v1.Container.
type Container struct {
	Name            string           `json:"name"`
	Image           string           `json:"image,omitempty"`
	Env             []EnvVar         `json:"env,omitempty"`
	Resources       Resources        `json:"resources,omitempty"`
	VolumeMounts    []VolumeMount    `json:"volumeMounts,omitempty"`
	SecurityContext *SecurityContext `json:"securityContext,omitempty"`
}

// Resources is v1.ResourceRequirements; a limit is a quantity in its
// canonical text ("8").
type Resources struct {
	Limits map[string]string `json:"limits,omitempty"`
}

// EnvVar is v1.EnvVar.
type EnvVar struct {
	Name      string        `json:"name"`
	Value     string        `json:"value,omitempty"`
	ValueFrom *EnvVarSource `json:"valueFrom,omitempty"`
}

// EnvVarSource is v1.EnvVarSource.
type EnvVarSource struct {
	SecretKeyRef *SecretKeySelector `json:"secretKeyRef,omitempty"`
}

// SecretKeySelector is v1.SecretKeySelector (its LocalObjectReference
// inlined).
type SecretKeySelector struct {
	Name string `json:"name,omitempty"`
	Key  string `json:"key"`
}

// LocalObjectReference is v1.LocalObjectReference.
type LocalObjectReference struct {
	Name string `json:"name,omitempty"`
}

// VolumeMount is v1.VolumeMount.
type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
}

// SecurityContext is v1.SecurityContext.
type SecurityContext struct {
	Capabilities   *Capabilities   `json:"capabilities,omitempty"`
	SeccompProfile *SeccompProfile `json:"seccompProfile,omitempty"`
}

// Capabilities is v1.Capabilities.
type Capabilities struct {
	Add []string `json:"add,omitempty"`
}

// SeccompProfile is v1.SeccompProfile.
type SeccompProfile struct {
	Type string `json:"type"`
}

// Volume is v1.Volume: a name and one volume source, written inline after
// it. Source is the source's JSON object, such as {"emptyDir":{}}.
type Volume struct {
	Name   string
	Source json.RawMessage
}

// MarshalJSON writes {"name":...,<source>} as v1.Volume's inlined
// VolumeSource does.
func (v Volume) MarshalJSON() ([]byte, error) {
	name, err := json.Marshal(v.Name)
	if err != nil {
		return nil, err
	}
	src := bytes.TrimSpace(v.Source)
	if len(src) < 2 || src[0] != '{' || src[len(src)-1] != '}' {
		return nil, &json.UnsupportedValueError{Str: "volume " + v.Name + " has no source object"}
	}
	var b bytes.Buffer
	b.WriteString(`{"name":`)
	b.Write(name)
	if inner := bytes.TrimSpace(src[1 : len(src)-1]); len(inner) > 0 {
		b.WriteByte(',')
		b.Write(inner)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// mediumMemory is the emptyDir medium of a tmpfs.
const mediumMemory = "Memory"

// emptyDir is an emptyDir volume source on medium ("" for the node's
// disk).
func emptyDir(medium string) json.RawMessage {
	if medium == "" {
		return json.RawMessage(`{"emptyDir":{}}`)
	}
	return mustSource(map[string]any{"emptyDir": map[string]string{"medium": medium}})
}

// hostPathDirOrCreate is a hostPath volume source that creates the node
// directory when missing.
func hostPathDirOrCreate(path string) json.RawMessage {
	return mustSource(map[string]any{"hostPath": map[string]string{"path": path, "type": "DirectoryOrCreate"}})
}

// mustSource marshals a volume source built from strings and maps, which
// cannot fail.
func mustSource(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
