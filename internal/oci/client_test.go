package oci

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/benchkite/benchkite/internal/oci/ocitest"
	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// standIn is go-containerregistry's in-process registry on loopback,
// behind wrap; it returns the registry's host.
func standIn(t *testing.T, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	return ocitest.NewRegistry(t, wrap).Host
}

func pushImage(t *testing.T, ref string, labels map[string]string) v1.Image {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.Config(img, v1.Config{Labels: labels}); err != nil {
		t.Fatal(err)
	}
	ocitest.Push(t, ref, img)
	return img
}

func anonymous(string) (Credential, error) { return Credential{}, nil }

func TestManifestAndBlob(t *testing.T) {
	t.Parallel()
	host := standIn(t, nil)
	img := pushImage(t, host+"/vllm/vllm-openai:nightly", map[string]string{"k": "v"})
	want, _ := img.Digest()
	c := &Client{Credentials: anonymous}
	ref, err := ParseRef(host + "/vllm/vllm-openai:nightly")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m, err := c.Manifest(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if m.Digest != want.String() || !IsImage(m.MediaType) {
		t.Fatalf("Manifest() = %s %s, want %s, an image", m.MediaType, m.Digest, want)
	}
	byDigest, err := c.Manifest(ctx, ref.At(m.Digest))
	if err != nil || string(byDigest.Body) != string(m.Body) {
		t.Fatalf("Manifest(by digest) = %v, %v", byDigest, err)
	}
	im, err := m.ParseImage()
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.Blob(ctx, ref.At(im.Config.Digest), MaxConfigBytes)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := ParseConfig(b)
	if err != nil || cf.Config.Labels["k"] != "v" {
		t.Errorf("config = %+v, %v; want label k=v", cf, err)
	}
	if _, err := c.Blob(ctx, ref.At(im.Config.Digest), 10); err == nil || !strings.Contains(err.Error(), "larger than 10 bytes") {
		t.Errorf("Blob(max 10) error = %v, want too large", err)
	}
	var re *Error
	_, err = c.Manifest(ctx, ref.WithTag("missing"))
	if !errors.As(err, &re) || re.StatusCode != http.StatusNotFound || !re.Has("MANIFEST_UNKNOWN") {
		t.Errorf("Manifest(missing) error = %#v, want a 404 MANIFEST_UNKNOWN", err)
	}
}

// A registry that sends other bytes than the digest asked for, or than
// the digest it states, is not believed.
func TestManifestDigestChecked(t *testing.T) {
	t.Parallel()
	var lie atomic.Value
	lie.Store("")
	host := standIn(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if d := lie.Load().(string); d != "" && strings.Contains(r.URL.Path, "/manifests/") {
				w.Header().Set("Content-Type", MediaOCIManifest)
				w.Header().Set("Docker-Content-Digest", d)
				io.WriteString(w, `{"mediaType":"`+MediaOCIManifest+`","config":{}}`)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	img := pushImage(t, host+"/a:t", nil)
	d, _ := img.Digest()
	c := &Client{Credentials: anonymous}
	lie.Store(d.String())
	ref, _ := ParseRef(host + "/a:t")
	if _, err := c.Manifest(context.Background(), ref); err == nil || !strings.Contains(err.Error(), "the registry says its digest is "+d.String()) {
		t.Errorf("Manifest(tag) from a lying registry: error = %v", err)
	}
	if _, err := c.Manifest(context.Background(), ref.At(d.String())); err == nil || !strings.Contains(err.Error(), "the registry sent one whose digest is") {
		t.Errorf("Manifest(digest) from a lying registry: error = %v", err)
	}
}

// Tags follows the Link header's pages and stays in the repository.
func TestTagsPages(t *testing.T) {
	t.Parallel()
	pages := map[string]string{
		"":  `</v2/a/tags/list?n=2&last=t2>; rel="next"`,
		"2": `</v2/a/tags/list?n=2&last=t4>; rel="next"`,
	}
	host := standIn(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v2/a/tags/list" && r.URL.Path != "/v2/b/tags/list" {
				h.ServeHTTP(w, r)
				return
			}
			if r.URL.Path == "/v2/b/tags/list" {
				w.Header().Set("Link", `<http://elsewhere.example/v2/b/tags/list?last=x>; rel="next"`)
				io.WriteString(w, `{"tags":["x"]}`)
				return
			}
			last := strings.TrimPrefix(r.URL.Query().Get("last"), "t")
			n := map[string]int{"": 1, "2": 3, "4": 5}[last]
			if l := pages[last]; l != "" {
				w.Header().Set("Link", l)
			}
			fmt.Fprintf(w, `{"name":"a","tags":["t%d","t%d"]}`, n, n+1)
		})
	})
	c := &Client{Credentials: anonymous}
	a, _ := ParseRepository(host + "/a")
	got, err := c.Tags(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, []string{"t1", "t2", "t3", "t4", "t5", "t6"}); diff != "" {
		t.Errorf("Tags() diff (-got +want):\n%s", diff)
	}
	b, _ := ParseRepository(host + "/b")
	if _, err := c.Tags(context.Background(), b); err == nil || !strings.Contains(err.Error(), "leaves the repository") {
		t.Errorf("Tags() with a Link elsewhere: error = %v", err)
	}
}

// tokenServer is a registry behind a token server, as Docker Hub and most
// cloud registries are: /v2/ answers 401 with a Bearer challenge, /token
// hands out a token for the scope asked, to the login it checks.
type tokenServer struct {
	user, pass, refresh string
	tokens              atomic.Int32
	requests            atomic.Int32
}

func (ts *tokenServer) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			scope, service := r.FormValue("scope"), r.FormValue("service")
			ok := false
			switch r.Method {
			case http.MethodGet:
				u, p, basic := r.BasicAuth()
				ok = basic && u == ts.user && p == ts.pass
			case http.MethodPost:
				ok = r.FormValue("grant_type") == "refresh_token" && r.FormValue("refresh_token") == ts.refresh
			}
			if !ok || scope != "repository:private/vllm:pull" || service != "test-registry" {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"bad login or scope"}]}`)
				return
			}
			ts.tokens.Add(1)
			io.WriteString(w, `{"access_token":"tok-123"}`)
			return
		}
		if r.Header.Get("Authorization") != "Bearer tok-123" && r.Method == http.MethodGet {
			w.Header().Set("WWW-Authenticate", `Bearer realm="http://`+r.Host+`/token",service="test-registry",scope="repository:private/vllm:pull"`)
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/v2/private/") {
			ts.requests.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}

func TestBearerToken(t *testing.T) {
	t.Parallel()
	ts := &tokenServer{user: "robot", pass: "hunter2", refresh: "refresh-me"}
	var pushing atomic.Bool
	pushing.Store(true)
	host := standIn(t, func(h http.Handler) http.Handler {
		guarded := ts.wrap(h)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if pushing.Load() {
				h.ServeHTTP(w, r)
				return
			}
			guarded.ServeHTTP(w, r)
		})
	})
	img := pushImage(t, host+"/private/vllm:nightly", nil)
	d, _ := img.Digest()
	pushing.Store(false)
	ref, _ := ParseRef(host + "/private/vllm:nightly")

	tests := []struct {
		name    string
		cred    Credential
		wantErr string
	}{
		{name: "password", cred: Credential{Username: "robot", Password: "hunter2"}},
		{name: "identity token", cred: Credential{IdentityToken: "refresh-me"}},
		{name: "wrong password", cred: Credential{Username: "robot", Password: "nope"}, wantErr: "registry answered unauthorized (bad login or scope), HTTP 401 Unauthorized"},
		{name: "anonymous", wantErr: "HTTP 401"},
	}
	for _, tt := range tests {
		ts.tokens.Store(0)
		c := &Client{Credentials: func(string) (Credential, error) { return tt.cred, nil }}
		m, err := c.Manifest(context.Background(), ref)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "nope") {
				t.Errorf("%s: Manifest() error = %v, want one containing %q and no password", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || m.Digest != d.String() {
			t.Errorf("%s: Manifest() = %v, %v; want digest %s", tt.name, m, err, d)
			continue
		}
		im, _ := m.ParseImage()
		if _, err := c.Blob(context.Background(), ref.At(im.Config.Digest), MaxConfigBytes); err != nil {
			t.Errorf("%s: Blob() error = %v", tt.name, err)
		}
		if n := ts.tokens.Load(); n != 1 {
			t.Errorf("%s: %d tokens fetched, want 1 for the repository", tt.name, n)
		}
	}
}

// The docker config's logins, as `docker login` and credential helpers
// leave them. Not parallel: it sets DOCKER_CONFIG and PATH.
func TestDockerCredentials(t *testing.T) {
	dir := t.TempDir()
	bin := t.TempDir()
	// A credential helper as docker runs it: server on stdin, JSON out.
	helper := `#!/bin/sh
[ "$1" = get ] || exit 2
read server
case "$server" in
  ecr.example) echo '{"ServerURL":"ecr.example","Username":"AWS","Secret":"ecr-pass"}' ;;
  acr.example) echo '{"ServerURL":"acr.example","Username":"<token>","Secret":"refresh"}' ;;
  https://index.docker.io/v1/) echo '{"Username":"hubuser","Secret":"hubpass"}' ;;
  *) echo "credentials not found in native keychain"; exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "docker-credential-test"), []byte(helper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("DOCKER_CONFIG", dir)
	write := func(cfg map[string]any) {
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	basic := func(u, p string) string { return base64.StdEncoding.EncodeToString([]byte(u + ":" + p)) }
	write(map[string]any{
		"auths": map[string]any{
			"https://index.docker.io/v1/": map[string]string{"auth": basic("hub", "hubsecret")},
			"reg.example:5000":            map[string]string{"username": "u", "password": "p"},
			"https://tok.example/v2/":     map[string]string{"identitytoken": "idtok"},
			"broken.example":              map[string]string{"auth": "!!!"},
		},
		"credHelpers": map[string]string{"ecr.example": "test", "acr.example": "test", "other.example": "test", "gone.example": "missing"},
	})
	tests := []struct {
		registry string
		want     Credential
		wantErr  string
	}{
		{registry: DockerHub, want: Credential{Username: "hub", Password: "hubsecret"}},
		{registry: "reg.example:5000", want: Credential{Username: "u", Password: "p"}},
		{registry: "tok.example", want: Credential{IdentityToken: "idtok"}},
		{registry: "nowhere.example"},
		{registry: "ecr.example", want: Credential{Username: "AWS", Password: "ecr-pass"}},
		{registry: "acr.example", want: Credential{IdentityToken: "refresh"}},
		{registry: "other.example"},
		{registry: "gone.example", wantErr: "credential helper docker-credential-missing get gone.example"},
		{registry: "broken.example", wantErr: "auths entry broken.example: auth is not base64"},
	}
	check := func() {
		t.Helper()
		for _, tt := range tests {
			got, err := DockerCredentials(tt.registry)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("DockerCredentials(%s) error = %v, want one containing %q", tt.registry, err, tt.wantErr)
				}
				continue
			}
			if err != nil || got != tt.want {
				t.Errorf("DockerCredentials(%s) = %+v, %v; want %+v", tt.registry, got, err, tt.want)
			}
		}
	}
	check()

	// A credential store serves every registry without a helper of its own.
	write(map[string]any{"credsStore": "test", "auths": map[string]any{"reg.example:5000": map[string]string{"username": "u", "password": "p"}}})
	tests = []struct {
		registry string
		want     Credential
		wantErr  string
	}{
		{registry: DockerHub, want: Credential{Username: "hubuser", Password: "hubpass"}},
		{registry: "ecr.example", want: Credential{Username: "AWS", Password: "ecr-pass"}},
		{registry: "reg.example:5000"},
	}
	check()

	t.Setenv("DOCKER_CONFIG", t.TempDir())
	if got, err := DockerCredentials(DockerHub); err != nil || got != (Credential{}) {
		t.Errorf("DockerCredentials with no config = %+v, %v; want anonymous", got, err)
	}
}
