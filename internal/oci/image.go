package oci

import (
	"encoding/json"
	"fmt"
	"time"
)

// Descriptor points at a manifest or blob.
type Descriptor struct {
	MediaType string    `json:"mediaType"`
	Digest    string    `json:"digest"`
	Size      int64     `json:"size"`
	Platform  *Platform `json:"platform,omitempty"`
}

// Platform is an index entry's OS and CPU.
type Platform struct {
	OS           string `json:"os"`
	Architecture string `json:"architecture"`
}

// Index is a multi-platform index (an OCI index or a Docker manifest
// list).
type Index struct {
	Manifests   []Descriptor      `json:"manifests"`
	Annotations map[string]string `json:"annotations"`
}

// ImageManifest is one image's manifest.
type ImageManifest struct {
	Config      Descriptor        `json:"config"`
	Annotations map[string]string `json:"annotations"`
}

// ConfigFile is the part of an image config read here.
type ConfigFile struct {
	Created time.Time `json:"created"`
	Config  struct {
		Labels map[string]string `json:"Labels"`
	} `json:"config"`
}

// MaxConfigBytes bounds what a registry can make us read for an image
// config.
const MaxConfigBytes = 8 << 20

// ParseIndex reads an index manifest.
func (m *Manifest) ParseIndex() (*Index, error) {
	if !IsIndex(m.MediaType) {
		return nil, fmt.Errorf("manifest %s is a %s, not an index", m.Digest, m.MediaType)
	}
	var idx Index
	if err := json.Unmarshal(m.Body, &idx); err != nil {
		return nil, fmt.Errorf("parse index %s: %w", m.Digest, err)
	}
	return &idx, nil
}

// ParseImage reads an image manifest.
func (m *Manifest) ParseImage() (*ImageManifest, error) {
	if !IsImage(m.MediaType) {
		return nil, fmt.Errorf("manifest %s is a %s, not an image", m.Digest, m.MediaType)
	}
	var im ImageManifest
	if err := json.Unmarshal(m.Body, &im); err != nil {
		return nil, fmt.Errorf("parse manifest: %w", err)
	}
	return &im, nil
}

// ParseConfig reads an image config.
func ParseConfig(b []byte) (*ConfigFile, error) {
	var cf ConfigFile
	if err := json.Unmarshal(b, &cf); err != nil {
		return nil, err
	}
	return &cf, nil
}

// PickImage is the image of an index a linux/amd64 node runs: that
// platform's, else the first image listed. Build attestations, listed as
// platform unknown/unknown, are never picked.
func PickImage(ms []Descriptor) (Descriptor, bool) {
	var first *Descriptor
	for i := range ms {
		d := ms[i]
		if !IsImage(d.MediaType) {
			continue
		}
		if d.Platform != nil && d.Platform.OS == "unknown" {
			continue
		}
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == "amd64" {
			return d, true
		}
		if first == nil {
			first = &ms[i]
		}
	}
	if first == nil {
		return Descriptor{}, false
	}
	return *first, true
}
