// Package oci is the little of the OCI distribution API the generator and
// the report step use: read a manifest by tag or digest, read a blob, list
// a repository's tags, with the registries' token and basic auth and the
// credentials `docker login` leaves. It replaces a full registry client
// whose dependencies were most of what a fresh CPU agent downloaded and
// compiled before a build's GPU steps could be uploaded.
package oci

import (
	"fmt"
	"regexp"
	"strings"
)

// Docker Hub's names: references without a registry, or with docker.io,
// name images there; its API answers at index.docker.io, and its
// one-component repositories live under library/.
const (
	DockerHub        = "index.docker.io"
	dockerHubAuthKey = "https://index.docker.io/v1/"
)

// Ref is an image reference, or a repository when Tag and Digest are empty.
type Ref struct {
	// Registry is the registry's host (and port) as written, or DockerHub.
	Registry string
	// Repository is the path in the registry, such as vllm/vllm-openai.
	Repository string
	// Tag is the tag; "latest" when a reference names neither tag nor digest.
	Tag string
	// Digest is sha256:<hex>, when the reference has one.
	Digest string
}

var (
	// A path component, as the distribution spec's grammar has it.
	componentRE = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	hostRE      = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:.]+\])(?::[0-9]+)?$`)
	tagRE       = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestRE    = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// ParseRef reads an image reference: [registry/]repository[:tag][@digest].
func ParseRef(s string) (Ref, error) {
	rest, digest, hasDigest := strings.Cut(s, "@")
	var r Ref
	if hasDigest {
		if !digestRE.MatchString(digest) {
			return Ref{}, fmt.Errorf("%q: digest %q is not sha256:<64 hex digits>", s, digest)
		}
		r.Digest = digest
	}
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		r.Tag = rest[i+1:]
		rest = rest[:i]
		if !tagRE.MatchString(r.Tag) {
			return Ref{}, fmt.Errorf("%q: tag %q is not a valid tag", s, r.Tag)
		}
	}
	repo, err := ParseRepository(rest)
	if err != nil {
		return Ref{}, fmt.Errorf("%q: %w", s, err)
	}
	repo.Tag, repo.Digest = r.Tag, r.Digest
	if repo.Tag == "" && repo.Digest == "" {
		repo.Tag = "latest"
	}
	return repo, nil
}

// ParseRepository reads [registry/]repository, with no tag or digest.
func ParseRepository(s string) (Ref, error) {
	r := Ref{Registry: DockerHub, Repository: s}
	if first, rest, ok := strings.Cut(s, "/"); ok && (strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first) {
		if !hostRE.MatchString(first) {
			return Ref{}, fmt.Errorf("registry %q is not a host name", first)
		}
		r.Registry, r.Repository = first, rest
	}
	switch r.Registry {
	case "docker.io", "registry-1.docker.io", DockerHub:
		r.Registry = DockerHub
		if !strings.Contains(r.Repository, "/") {
			r.Repository = "library/" + r.Repository
		}
	}
	if r.Repository == "" {
		return Ref{}, fmt.Errorf("no repository in %q", s)
	}
	for _, c := range strings.Split(r.Repository, "/") {
		if !componentRE.MatchString(c) {
			return Ref{}, fmt.Errorf("repository %q: %q is not a valid path component (lower case letters, digits and . _ - between them)", r.Repository, c)
		}
	}
	return r, nil
}

// Name is the reference in full (registry/repository:tag or @digest): two
// spellings of one image have the same Name. A digest wins over a tag.
func (r Ref) Name() string {
	switch {
	case r.Digest != "":
		return r.Registry + "/" + r.Repository + "@" + r.Digest
	case r.Tag != "":
		return r.Registry + "/" + r.Repository + ":" + r.Tag
	}
	return r.Registry + "/" + r.Repository
}

// String is Name.
func (r Ref) String() string { return r.Name() }

// Identifier is what the manifests endpoint takes: the digest, else the tag.
func (r Ref) Identifier() string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Tag
}

// At is the image digest d of r's repository.
func (r Ref) At(d string) Ref { return Ref{Registry: r.Registry, Repository: r.Repository, Digest: d} }

// WithTag is the image tag t of r's repository.
func (r Ref) WithTag(t string) Ref {
	return Ref{Registry: r.Registry, Repository: r.Repository, Tag: t}
}

// scheme is http for a registry on this machine's loopback (the tests' and
// a developer's local registry), https for every other.
func (r Ref) scheme() string {
	host := r.Registry
	if h, _, ok := strings.Cut(strings.TrimPrefix(host, "["), "]"); ok && strings.HasPrefix(host, "[") {
		host = h
	} else if i := strings.LastIndex(host, ":"); i >= 0 {
		host = host[:i]
	}
	switch {
	case host == "localhost", host == "::1", strings.HasPrefix(host, "127."), strings.HasSuffix(host, ".localhost"):
		return "http"
	}
	return "https"
}
