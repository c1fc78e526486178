// Package ocitest serves go-containerregistry's in-process registry on
// loopback for the tests of the packages that read registries, and pushes
// images to it.
package ocitest

import (
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is a registry on loopback, behind an optional wrapper, that
// counts the manifest GETs per path (a push only HEADs them).
type Registry struct {
	// Host is the registry's host:port.
	Host string

	mu   sync.Mutex
	gets map[string]int
}

// NewRegistry starts a registry for the test's life; wrap, when not nil,
// stands between the counting and the registry.
func NewRegistry(t testing.TB, wrap func(http.Handler) http.Handler) *Registry {
	t.Helper()
	reg := &Registry{gets: map[string]int{}}
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/") {
			reg.mu.Lock()
			reg.gets[r.URL.Path]++
			reg.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	reg.Host = strings.TrimPrefix(srv.URL, "http://")
	return reg
}

// ManifestGets is how many times the manifest ref (a tag or a digest) of
// repo was fetched.
func (r *Registry) ManifestGets(repo, ref string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets["/v2/"+repo+"/manifests/"+ref]
}

// Gets is every manifest GET counted, by path.
func (r *Registry) Gets() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.gets)
}

// ResetGets forgets the GETs counted so far.
func (r *Registry) ResetGets() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gets = map[string]int{}
}

// Push writes img to ref and returns its digest.
func Push(t testing.TB, ref string, img v1.Image, opts ...remote.Option) string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(r, img, opts...); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}
