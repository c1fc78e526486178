package imagepin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/oci"
	"github.com/benchkite/benchkite/internal/oci/ocitest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

const (
	commitA = "0123456789abcdef0123456789abcdef01234567"
	commitB = "fedcba9876543210fedcba9876543210fedcba98"
)

// labelled is a random image whose config carries labels.
func labelled(t *testing.T, labels map[string]string) v1.Image {
	t.Helper()
	img, err := random.Image(512, 1)
	if err != nil {
		t.Fatal(err)
	}
	if labels == nil {
		return img
	}
	img, err = mutate.Config(img, v1.Config{Labels: labels})
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func pushIndex(t *testing.T, ref string, idx v1.ImageIndex) string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(r, idx); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// anonymous resolves with no credentials at all, whatever this machine's
// docker config holds.
func anonymous() *Resolver {
	return &Resolver{Credentials: func(string) (oci.Credential, error) { return oci.Credential{}, nil }, Timeout: 10 * time.Second, Backoff: time.Millisecond}
}

func TestResolvePinsTheDigestPushed(t *testing.T) {
	t.Parallel()
	reg := ocitest.NewRegistry(t, nil)
	h := reg.Host
	dNightly := ocitest.Push(t, h+"/vllm/vllm-openai:nightly", labelled(t, map[string]string{
		"ai.vllm.build.commit":              commitA,
		"org.opencontainers.image.revision": commitA,
	}))
	dUnknown := ocitest.Push(t, h+"/vllm/vllm-openai:nightly-abc1234", labelled(t, map[string]string{"ai.vllm.build.commit": "unknown"}))
	dRevision := ocitest.Push(t, h+"/vllm/vllm-openai-rocm:nightly", labelled(t, map[string]string{"org.opencontainers.image.revision": commitB}))
	dLatest := ocitest.Push(t, h+"/plain:latest", labelled(t, nil))
	dMismatch := ocitest.Push(t, h+"/vllm/vllm-openai:nightly-0123abc", labelled(t, map[string]string{"ai.vllm.build.commit": commitB}))

	tests := []struct {
		ref  string
		want Pin
	}{
		{
			ref: h + "/vllm/vllm-openai:nightly",
			want: Pin{Repo: h + "/vllm/vllm-openai", Tag: "nightly", Digest: dNightly, Pinned: h + "/vllm/vllm-openai:nightly@" + dNightly,
				Commit: commitA, CommitFrom: "label ai.vllm.build.commit"},
		},
		{
			ref: h + "/vllm/vllm-openai:nightly-abc1234",
			want: Pin{Repo: h + "/vllm/vllm-openai", Tag: "nightly-abc1234", Digest: dUnknown, Pinned: h + "/vllm/vllm-openai:nightly-abc1234@" + dUnknown,
				Commit: "abc1234", CommitFrom: "tag"},
		},
		{
			ref: h + "/vllm/vllm-openai-rocm:nightly",
			want: Pin{Repo: h + "/vllm/vllm-openai-rocm", Tag: "nightly", Digest: dRevision, Pinned: h + "/vllm/vllm-openai-rocm:nightly@" + dRevision,
				Commit: commitB, CommitFrom: "label org.opencontainers.image.revision"},
		},
		{
			ref:  h + "/plain",
			want: Pin{Repo: h + "/plain", Tag: "latest", Digest: dLatest, Pinned: h + "/plain:latest@" + dLatest},
		},
		{
			ref:  h + "/plain@" + dLatest,
			want: Pin{Repo: h + "/plain", Digest: dLatest, Pinned: h + "/plain@" + dLatest},
		},
		{
			ref:  h + "/plain:latest@" + dLatest,
			want: Pin{Repo: h + "/plain", Tag: "latest", Digest: dLatest, Pinned: h + "/plain:latest@" + dLatest},
		},
		{
			ref: h + "/vllm/vllm-openai:nightly-0123abc",
			want: Pin{Repo: h + "/vllm/vllm-openai", Tag: "nightly-0123abc", Digest: dMismatch, Pinned: h + "/vllm/vllm-openai:nightly-0123abc@" + dMismatch,
				Commit: commitB, CommitFrom: "label ai.vllm.build.commit",
				Warning: "tag says vLLM commit 0123abc but the image's label ai.vllm.build.commit says " + commitB + "; using the image's"},
		},
	}
	var refs []string
	for _, tt := range tests {
		refs = append(refs, tt.ref)
	}
	res := anonymous().Resolve(context.Background(), refs)
	if res.Note != "" {
		t.Errorf("Note = %q, want none when resolving", res.Note)
	}
	for _, tt := range tests {
		got, ok := res.Lookup(tt.ref)
		if !ok {
			t.Fatalf("Lookup(%q) found nothing", tt.ref)
		}
		tt.want.Ref = tt.ref
		if diff := cmp.Diff(got, tt.want, cmp.Comparer(errorText)); diff != "" {
			t.Errorf("Resolve(%q) diff (-got +want):\n%s", tt.ref, diff)
		}
	}
}

func errorText(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
}

// A multi-arch index pins to the index digest, so each node pulls its own
// platform; the commit comes from the linux/amd64 image, past a build
// attestation listed as unknown/unknown.
func TestResolveMultiArchIndex(t *testing.T) {
	t.Parallel()
	reg := ocitest.NewRegistry(t, nil)
	attestation := labelled(t, nil)
	amd := labelled(t, map[string]string{"ai.vllm.build.commit": commitA})
	arm := labelled(t, map[string]string{"ai.vllm.build.commit": commitB})
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: attestation, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
	)
	ref := reg.Host + "/vllm/vllm-openai:nightly"
	d := pushIndex(t, ref, idx)

	// Without labels, the revision annotation on the index says it.
	bare := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: labelled(t, nil), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
	)
	annotated := mutate.Annotations(bare, map[string]string{"org.opencontainers.image.revision": commitB}).(v1.ImageIndex)
	ref2 := reg.Host + "/vllm/vllm-openai:annotated"
	d2 := pushIndex(t, ref2, annotated)

	res := anonymous().Resolve(context.Background(), []string{ref, ref2})
	want := []Pin{
		{Ref: ref, Repo: reg.Host + "/vllm/vllm-openai", Tag: "nightly", Digest: d, Pinned: ref + "@" + d, Commit: commitA, CommitFrom: "label ai.vllm.build.commit"},
		{Ref: ref2, Repo: reg.Host + "/vllm/vllm-openai", Tag: "annotated", Digest: d2, Pinned: ref2 + "@" + d2, Commit: commitB, CommitFrom: "index annotation org.opencontainers.image.revision"},
	}
	if diff := cmp.Diff(res.Pins, want, cmp.Comparer(errorText)); diff != "" {
		t.Errorf("Resolve() diff (-got +want):\n%s", diff)
	}
}

// A missing tag or repository fails that image only, with the registry's
// answer in plain words; no retry for an answer that will not change.
func TestResolveMissing(t *testing.T) {
	t.Parallel()
	reg := ocitest.NewRegistry(t, nil)
	good := reg.Host + "/vllm/vllm-openai:nightly"
	d := ocitest.Push(t, good, labelled(t, nil))
	missingTag := reg.Host + "/vllm/vllm-openai:nightly-deadbee"
	missingRepo := reg.Host + "/vllm/vllm-typo:nightly"

	res := anonymous().Resolve(context.Background(), []string{good, missingTag, missingRepo})
	if p, _ := res.Lookup(good); p.Err != nil || p.Pinned != good+"@"+d {
		t.Errorf("Resolve(%s) = %+v, want pinned to %s", good, p, d)
	}
	tests := []struct {
		ref, path string
		want      string
	}{
		{missingTag, "vllm/vllm-openai", "image " + missingTag + ": not found in registry " + reg.Host +
			": registry answered manifest unknown (Unknown manifest), HTTP 404 Not Found"},
		{missingRepo, "vllm/vllm-typo", "image " + missingRepo + ": not found in registry " + reg.Host +
			": registry answered name unknown (Unknown name), HTTP 404 Not Found"},
	}
	for _, tt := range tests {
		p, _ := res.Lookup(tt.ref)
		if p.Err == nil {
			t.Fatalf("Resolve(%s) = %+v, want an error", tt.ref, p)
		}
		if got := p.Err.Error(); got != tt.want {
			t.Errorf("Resolve(%s) error = %q\nwant %q", tt.ref, got, tt.want)
		}
		var e *Error
		if !errors.As(p.Err, &e) || e.Kind != NotFound || e.Status != http.StatusNotFound {
			t.Errorf("Resolve(%s) error = %#v, want Kind %q, Status 404", tt.ref, p.Err, NotFound)
		}
		if p.Pinned != "" || p.Digest != "" || pinnedOrRef(p) != tt.ref {
			t.Errorf("Resolve(%s) failed but pinned: %+v", tt.ref, p)
		}
		if n := reg.ManifestGets(tt.path, "nightly"+strings.TrimPrefix(tt.ref, reg.Host+"/"+tt.path+":nightly")); n != 1 {
			t.Errorf("manifest requests for %s = %d, want 1 (a 404 is not retried)", tt.ref, n)
		}
	}
	if diff := cmp.Diff(len(failed(res)), 2); diff != "" {
		t.Errorf("len(failed()) diff (-got +want):\n%s", diff)
	}
}

// requireBasic makes the registry demand HTTP basic auth, as a private
// registry does.
func requireBasic(user, pass string) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			if ok && u == user && p == pass {
				h.ServeHTTP(w, r)
				return
			}
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
		})
	}
}

// static is one login for every registry.
func static(user, pass string) func(string) (oci.Credential, error) {
	return func(string) (oci.Credential, error) { return oci.Credential{Username: user, Password: pass}, nil }
}

func TestResolveUnauthorized(t *testing.T) {
	t.Parallel()
	reg := ocitest.NewRegistry(t, requireBasic("ci", "s3cret"))
	ref := reg.Host + "/private/vllm:nightly"
	d := ocitest.Push(t, ref, labelled(t, nil), remote.WithAuth(&authn.Basic{Username: "ci", Password: "s3cret"}))

	res := anonymous().Resolve(context.Background(), []string{ref})
	p := res.Pins[0]
	var e *Error
	if !errors.As(p.Err, &e) || e.Kind != Unauthorized || e.Status != http.StatusUnauthorized || e.Attempts != 1 {
		t.Fatalf("Resolve(%s) anonymously: err = %#v, want Kind unauthorized, HTTP 401, one attempt", ref, p.Err)
	}
	for _, s := range []string{"image " + ref, "unauthorized by registry " + reg.Host + " (HTTP 401)", "docker login", "registry answered unauthorized (authentication required), HTTP 401 Unauthorized"} {
		if !strings.Contains(p.Err.Error(), s) {
			t.Errorf("error %q does not say %q", p.Err, s)
		}
	}
	if strings.Contains(p.Err.Error(), "s3cret") {
		t.Errorf("error %q shows the password", p.Err)
	}

	r := anonymous()
	r.Credentials = static("ci", "s3cret")
	if p := r.Resolve(context.Background(), []string{ref}).Pins[0]; p.Err != nil || p.Digest != d {
		t.Errorf("Resolve(%s) with credentials = %+v, want digest %s", ref, p, d)
	}
}

// The zero Resolver reads credentials from the docker config, as
// `docker login` writes them. Not parallel: it sets DOCKER_CONFIG.
func TestResolveDockerConfigCredentials(t *testing.T) {
	reg := ocitest.NewRegistry(t, requireBasic("robot", "hunter2"))
	ref := reg.Host + "/private/vllm:nightly"
	d := ocitest.Push(t, ref, labelled(t, nil), remote.WithAuth(&authn.Basic{Username: "robot", Password: "hunter2"}))

	dir := t.TempDir()
	cfg := map[string]any{"auths": map[string]any{reg.Host: map[string]string{"auth": base64.StdEncoding.EncodeToString([]byte("robot:hunter2"))}}}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)

	p := (&Resolver{Backoff: time.Millisecond}).Resolve(context.Background(), []string{ref}).Pins[0]
	if p.Err != nil || p.Digest != d {
		t.Errorf("Resolve(%s) with DOCKER_CONFIG = %+v, want digest %s", ref, p, d)
	}
}

// A registry that never answers costs Attempts tries of Timeout each, then
// a timeout error that says so; the test would hang if it did not.
func TestResolveSlowRegistry(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	reg := ocitest.NewRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/manifests/") && r.Method == http.MethodGet {
				select {
				case <-r.Context().Done():
				case <-stop:
				}
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	t.Cleanup(func() { close(stop) })
	ref := reg.Host + "/vllm/vllm-openai:nightly"
	r := anonymous()
	// Each attempt's limit covers the registry ping too: under a loaded
	// race-detector run 100 ms could end an attempt before its manifest
	// request was sent, and the count below would be short.
	r.Timeout = 500 * time.Millisecond
	r.Attempts = 3

	p := r.Resolve(context.Background(), []string{ref}).Pins[0]
	var e *Error
	if !errors.As(p.Err, &e) || e.Kind != Timeout || e.Attempts != 3 {
		t.Fatalf("Resolve(%s) err = %#v, want Kind timeout after 3 attempts", ref, p.Err)
	}
	want := "image " + ref + ": no answer from registry " + reg.Host + " after 3 attempts: nothing within 500ms"
	if p.Err.Error() != want {
		t.Errorf("error = %q\nwant %q", p.Err, want)
	}
	if n := reg.ManifestGets("vllm/vllm-openai", "nightly"); n != 3 {
		t.Errorf("manifest requests = %d, want 3", n)
	}
}

// A registry that fails once (HTTP 503) is asked again.
func TestResolveRetriesTransientFailure(t *testing.T) {
	t.Parallel()
	var failed atomic.Bool
	reg := ocitest.NewRegistry(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/manifests/") && r.Method == http.MethodGet && failed.CompareAndSwap(false, true) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				io.WriteString(w, `{"errors":[{"code":"UNAVAILABLE","message":"try later"}]}`)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	ref := reg.Host + "/vllm/vllm-openai:nightly"
	d := ocitest.Push(t, ref, labelled(t, nil))
	failed.Store(false)

	p := anonymous().Resolve(context.Background(), []string{ref}).Pins[0]
	if p.Err != nil || p.Digest != d {
		t.Fatalf("Resolve(%s) = %+v, want digest %s", ref, p, d)
	}
	if n := reg.ManifestGets("vllm/vllm-openai", "nightly"); n != 2 {
		t.Errorf("manifest requests = %d, want 2", n)
	}
}

// dockerHub stands in for Docker Hub on loopback: registry-1.docker.io and
// auth.docker.io are rewritten to the test server, which hands out
// anonymous bearer tokens as Docker Hub does and serves manifests only to
// a request that carries one.
type dockerHub struct {
	target string
	armed  atomic.Bool
	tokens atomic.Int32
}

func (d *dockerHub) RoundTrip(r *http.Request) (*http.Response, error) {
	switch r.URL.Host {
	case "index.docker.io", "registry-1.docker.io", "auth.docker.io":
	default:
		return nil, errors.New("test transport: no network to " + r.URL.Host)
	}
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host = "http", d.target
	return http.DefaultTransport.RoundTrip(r)
}

func (d *dockerHub) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			if _, _, ok := r.BasicAuth(); ok {
				http.Error(w, "anonymous only", http.StatusBadRequest)
				return
			}
			if !strings.HasPrefix(r.URL.Query().Get("scope"), "repository:vllm/vllm-openai:pull") {
				http.Error(w, "bad scope "+r.URL.Query().Get("scope"), http.StatusBadRequest)
				return
			}
			d.tokens.Add(1)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"token":"anon-token"}`)
			return
		}
		// The test's own pushes come before the hub is armed.
		if !d.armed.Load() || r.Header.Get("Authorization") == "Bearer anon-token" {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://auth.docker.io/token",service="registry.docker.io"`)
		w.WriteHeader(http.StatusUnauthorized)
	})
}

// Spellings of one image resolve once, and each keeps its own spelling in
// the pinned form.
func TestResolveDedupesAndUsesAnonymousTokens(t *testing.T) {
	t.Parallel()
	hub := &dockerHub{}
	reg := ocitest.NewRegistry(t, hub.wrap)
	hub.target = reg.Host
	d := ocitest.Push(t, reg.Host+"/vllm/vllm-openai:nightly", labelled(t, map[string]string{"ai.vllm.build.commit": commitA}))
	hub.armed.Store(true)

	refs := []string{
		"vllm/vllm-openai:nightly",
		"docker.io/vllm/vllm-openai:nightly",
		"vllm/vllm-openai:nightly",
		"index.docker.io/vllm/vllm-openai:nightly",
	}
	r := anonymous()
	r.Transport = hub
	res := r.Resolve(context.Background(), refs)
	var got []string
	for _, p := range res.Pins {
		if p.Err != nil {
			t.Fatalf("Resolve(%s): %v", p.Ref, p.Err)
		}
		got = append(got, p.Pinned+" "+p.Commit)
	}
	want := []string{
		"vllm/vllm-openai:nightly@" + d + " " + commitA,
		"docker.io/vllm/vllm-openai:nightly@" + d + " " + commitA,
		"index.docker.io/vllm/vllm-openai:nightly@" + d + " " + commitA,
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Resolve(%q) diff (-got +want):\n%s", refs, diff)
	}
	if n := reg.ManifestGets("vllm/vllm-openai", "nightly"); n != 1 {
		t.Errorf("manifest requests = %d, want 1 for one image", n)
	}
	if n := hub.tokens.Load(); n != 1 {
		t.Errorf("token requests = %d, want 1", n)
	}
}

func TestResolveSkip(t *testing.T) {
	t.Parallel()
	refs := []string{"vllm/vllm-openai:nightly-abc1234", "vllm/vllm-openai-rocm:nightly", "vllm/vllm-openai:nightly-abc1234"}
	// No transport can reach anything: Skip must not try.
	r := &Resolver{Skip: true, Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		t.Error("Skip made a request")
		return nil, errors.New("no network")
	})}
	res := r.Resolve(context.Background(), refs)
	want := []Pin{
		{Ref: refs[0], Repo: "vllm/vllm-openai", Tag: "nightly-abc1234", Pinned: refs[0], Commit: "abc1234", CommitFrom: "tag", Skipped: true},
		{Ref: refs[1], Repo: "vllm/vllm-openai-rocm", Tag: "nightly", Pinned: refs[1], Skipped: true},
	}
	if diff := cmp.Diff(res.Pins, want, cmp.Comparer(errorText)); diff != "" {
		t.Errorf("Resolve() with Skip diff (-got +want):\n%s", diff)
	}
	if res.Note != SkipNote || !strings.Contains(res.Note, "not pinned") {
		t.Errorf("Note = %q, want SkipNote", res.Note)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestResolveInvalidRef(t *testing.T) {
	t.Parallel()
	p := anonymous().Resolve(context.Background(), []string{"Not A Ref!"}).Pins[0]
	var e *Error
	if !errors.As(p.Err, &e) || e.Kind != InvalidRef || !strings.HasPrefix(p.Err.Error(), `image Not A Ref!: not an image reference: `) {
		t.Errorf("Resolve(bad ref) err = %v, want an invalid reference error", p.Err)
	}
}

// A canceled build stops resolving at once and says why.
func TestResolveCanceled(t *testing.T) {
	t.Parallel()
	reg := ocitest.NewRegistry(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := anonymous().Resolve(ctx, []string{reg.Host + "/a:b"}).Pins[0]
	var e *Error
	if !errors.As(p.Err, &e) || e.Kind != Canceled {
		t.Errorf("Resolve(canceled) err = %#v, want Kind canceled", p.Err)
	}
}

// pinnedOrRef is the reference a step should run: the pinned form when there is
// one, the reference as given otherwise.
func pinnedOrRef(p Pin) string {
	if p.Pinned != "" {
		return p.Pinned
	}
	return p.Ref
}

// failed lists the pins that could not be resolved.
func failed(r *Result) []Pin {
	var out []Pin
	for _, p := range r.Pins {
		if p.Err != nil {
			out = append(out, p)
		}
	}
	return out
}
