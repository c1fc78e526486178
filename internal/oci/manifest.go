package oci

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Media types of the manifests asked for: multi-platform indexes and
// single images, OCI and Docker's.
const (
	MediaOCIIndex       = "application/vnd.oci.image.index.v1+json"
	MediaDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	MediaDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
)

var manifestAccept = strings.Join([]string{MediaOCIIndex, MediaDockerList, MediaOCIManifest, MediaDockerManifest}, ", ")

// IsIndex reports whether a media type is a multi-platform index.
func IsIndex(mediaType string) bool {
	return mediaType == MediaOCIIndex || mediaType == MediaDockerList
}

// IsImage reports whether a media type is one image's manifest.
func IsImage(mediaType string) bool {
	return mediaType == MediaOCIManifest || mediaType == MediaDockerManifest
}

// Manifest is a manifest as the registry holds it.
type Manifest struct {
	MediaType string
	// Digest is the sha256 of Body: what a pull by digest asks for.
	Digest string
	Body   []byte
}

// Manifest reads the manifest ref names (its digest, else its tag),
// checking the body against the digest asked for or the one the registry
// states.
func (c *Client) Manifest(ctx context.Context, ref Ref) (*Manifest, error) {
	body, header, err := c.read(ctx, ref, "/manifests/"+ref.Identifier(), manifestAccept, "manifest", maxManifestBytes)
	if err != nil {
		return nil, err
	}
	m := &Manifest{Body: body, Digest: digestOf(body)}
	if ref.Digest != "" && ref.Digest != m.Digest {
		return nil, fmt.Errorf("manifest %s: the registry sent one whose digest is %s", ref, m.Digest)
	}
	if d := header.Get("Docker-Content-Digest"); strings.HasPrefix(d, "sha256:") && d != m.Digest {
		return nil, fmt.Errorf("manifest %s: the registry says its digest is %s, but it is %s", ref, d, m.Digest)
	}
	m.MediaType, _, _ = strings.Cut(header.Get("Content-Type"), ";")
	m.MediaType = strings.TrimSpace(m.MediaType)
	if !IsIndex(m.MediaType) && !IsImage(m.MediaType) {
		// Some registries send application/json: the body says.
		var doc struct {
			MediaType string `json:"mediaType"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return nil, fmt.Errorf("manifest %s: %w", ref, err)
		}
		m.MediaType = doc.MediaType
	}
	return m, nil
}
