// Package bisecttest is a loopback image registry of vLLM nightly images
// for bisect tests: go-containerregistry's in-process registry, and images
// whose creation times order the commits as a nightly pipeline pushed them.
package bisecttest

import (
	"io"
	"log"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry starts a registry on loopback for the test's life and returns
// the repository path on it (host:port/path).
func Registry(t testing.TB, path string) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://") + "/" + path
}

// Push writes a small random image created at created to repo:tag.
func Push(t testing.TB, repo, tag string, created time.Time) {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.CreatedAt(img, v1.Time{Time: created}); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
}

// Nightlies pushes a nightly-<commit> image of each commit, in order, the
// i-th created i hours after t0, as the nightly images were built.
func Nightlies(t testing.TB, repo string, t0 time.Time, commits []string) {
	t.Helper()
	for i, c := range commits {
		Push(t, repo, "nightly-"+c, t0.Add(time.Duration(i)*time.Hour))
	}
}
