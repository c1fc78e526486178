package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Client reads from registries. The zero value uses http.DefaultTransport
// and the credentials of the docker config (DockerCredentials).
type Client struct {
	// Transport carries the requests; nil means http.DefaultTransport.
	Transport http.RoundTripper
	// Credentials finds the login for a registry host; nil means
	// DockerCredentials. A zero Credential is anonymous.
	Credentials func(registry string) (Credential, error)
	// UserAgent names the caller in every request.
	UserAgent string
	// MaxRequests bounds the HTTP requests the client makes in its life,
	// token requests included; DefaultMaxRequests when zero. A registry
	// that keeps answering with more pages, or a caller that asks for
	// every image, is stopped with ErrRequestBudget, far inside Docker
	// Hub's rate limits.
	MaxRequests int
	// Timeout bounds each request; DefaultTimeout when zero.
	Timeout time.Duration
	// HubAPI is Docker Hub's web API, for what the registry API cannot
	// say (when each tag was pushed); DefaultHubAPI when empty.
	HubAPI string

	mu sync.Mutex
	// requests counts the requests made.
	requests int
	// auth is the Authorization header that worked, per registry and
	// repository (a token's scope is one repository).
	auth map[string]string
	// challenges are each registry's answer to GET /v2/: how it wants to
	// be authenticated (none when it answered 200).
	challenges map[string][]string
}

// Limits on what a registry can make us read.
const (
	maxManifestBytes = 4 << 20
	maxErrorBytes    = 64 << 10
	maxTokenBytes    = 1 << 20
	maxTagsBytes     = 16 << 20
	// MaxTagPages bounds the pages of a tag list read.
	MaxTagPages = 20
)

// DefaultMaxRequests is a client's request budget: Docker Hub allows an
// anonymous address 100 manifest pulls in 6 hours and counts every GET of
// a manifest as one; nothing the generator or the report step does needs
// more than a few dozen requests.
const DefaultMaxRequests = 60

// DefaultTimeout bounds one request.
const DefaultTimeout = 30 * time.Second

// DefaultHubAPI is Docker Hub's web API.
const DefaultHubAPI = "https://hub.docker.com"

// ErrRequestBudget is a client out of requests (Client.MaxRequests).
var ErrRequestBudget = errors.New("registry request budget spent")

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

// Error is a registry's (or its token server's) answer other than success.
type Error struct {
	// Registry is the host that answered.
	Registry   string
	StatusCode int
	// Errors are the distribution spec's error entries of the body.
	Errors []Diagnostic
}

// Diagnostic is one entry of a registry's error body.
type Diagnostic struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error words it as the registry did: its codes, lower case, and messages,
// then the HTTP status.
func (e *Error) Error() string {
	var parts []string
	for _, d := range e.Errors {
		code := strings.ToLower(strings.ReplaceAll(d.Code, "_", " "))
		msg := strings.TrimSpace(d.Message)
		switch {
		case msg == "" || strings.EqualFold(msg, code):
			parts = append(parts, code)
		default:
			parts = append(parts, code+" ("+msg+")")
		}
	}
	status := fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if len(parts) == 0 {
		return "registry answered " + status
	}
	return "registry answered " + strings.Join(parts, "; ") + ", " + status
}

// Has reports whether the registry answered with the error code.
func (e *Error) Has(code string) bool {
	for _, d := range e.Errors {
		if d.Code == code {
			return true
		}
	}
	return false
}

func errorOf(host string, resp *http.Response) *Error {
	e := &Error{Registry: host, StatusCode: resp.StatusCode}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBytes))
	var doc struct {
		Errors []Diagnostic `json:"errors"`
	}
	if json.Unmarshal(body, &doc) == nil {
		e.Errors = doc.Errors
	}
	return e
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

// Blob reads the blob ref.Digest names, up to max bytes, checked against
// the digest.
func (c *Client) Blob(ctx context.Context, ref Ref, max int64) ([]byte, error) {
	if !digestRE.MatchString(ref.Digest) {
		return nil, fmt.Errorf("blob of %s: no sha256 digest", ref)
	}
	body, _, err := c.read(ctx, ref, "/blobs/"+ref.Digest, "", "blob", max)
	if err != nil {
		return nil, err
	}
	if d := digestOf(body); d != ref.Digest {
		return nil, fmt.Errorf("blob %s: the registry sent one whose digest is %s", ref, d)
	}
	return body, nil
}

// read gets path below ref's repository and reads its body, at most max
// bytes: more is an error, as is a body that breaks off. what names the
// object in errors.
func (c *Client) read(ctx context.Context, ref Ref, path, accept, what string, max int64) ([]byte, http.Header, error) {
	resp, err := c.get(ctx, ref, path, accept)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s %s: %w", what, ref, err)
	}
	if int64(len(body)) > max {
		return nil, nil, fmt.Errorf("%s %s is larger than %d bytes", what, ref, max)
	}
	return body, resp.Header, nil
}

// Tags lists the tags of repo, following the registry's pages.
func (c *Client) Tags(ctx context.Context, repo Ref) ([]string, error) {
	var all []string
	next := "/tags/list"
	seen := map[string]bool{}
	for pages := 0; next != ""; pages++ {
		if seen[next] {
			return nil, fmt.Errorf("tags of %s: the Link header points back to a page already read (%s)", repo, next)
		}
		if pages == MaxTagPages {
			return nil, fmt.Errorf("tags of %s: more than %d pages of tags; not read further", repo, MaxTagPages)
		}
		seen[next] = true
		resp, err := c.get(ctx, repo, next, "application/json")
		if err != nil {
			return nil, err
		}
		var page struct {
			Tags []string `json:"tags"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, maxTagsBytes)).Decode(&page)
		link := resp.Header.Get("Link")
		base := resp.Request.URL
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("tags of %s: %w", repo, err)
		}
		all = append(all, page.Tags...)
		next, err = nextPage(base, link, repo)
		if err != nil {
			return nil, err
		}
	}
	return all, nil
}

// nextPage is the path and query after /v2/<repository> of the Link
// header's next page, or "" on the last page.
func nextPage(base *url.URL, link string, repo Ref) (string, error) {
	if link == "" {
		return "", nil
	}
	target, _, _ := strings.Cut(link, ";")
	target = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(target), "<"), ">")
	u, err := base.Parse(target)
	if err != nil {
		return "", fmt.Errorf("tags of %s: Link header %q: %w", repo, link, err)
	}
	prefix := "/v2/" + repo.Repository
	if u.Host != base.Host || !strings.HasPrefix(u.Path, prefix+"/") {
		return "", fmt.Errorf("tags of %s: Link header %q leaves the repository", repo, link)
	}
	next := strings.TrimPrefix(u.Path, prefix)
	if u.RawQuery != "" {
		next += "?" + u.RawQuery
	}
	return next, nil
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// get asks the registry for /v2/<repository><path>, authenticating as the
// registry's challenge asks: a bearer token from its token server for this
// repository, or basic auth. It returns a 2xx response or an error; an
// *Error carries the registry's answer.
func (c *Client) get(ctx context.Context, ref Ref, path, accept string) (*http.Response, error) {
	target := ref.scheme() + "://" + ref.Registry + "/v2/" + ref.Repository + path
	key := ref.Registry + "/" + ref.Repository
	c.mu.Lock()
	auth := c.auth[key]
	challenges, pinged := c.challenges[ref.Registry]
	c.mu.Unlock()
	if auth == "" {
		// Authenticate before the first request, as docker does, so a
		// registry sees each request once.
		if !pinged {
			var err error
			if challenges, err = c.ping(ctx, ref); err != nil {
				return nil, err
			}
		}
		if len(challenges) > 0 {
			var err error
			if auth, err = c.authorize(ctx, ref, challenges); err != nil {
				return nil, err
			}
			c.remember(key, auth)
		}
	}
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
		if err != nil {
			return nil, err
		}
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		if c.UserAgent != "" {
			req.Header.Set("User-Agent", c.UserAgent)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := c.client().Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode/100 == 2 {
			return resp, nil
		}
		if resp.StatusCode != http.StatusUnauthorized || try > 0 {
			defer resp.Body.Close()
			return nil, errorOf(ref.Registry, resp)
		}
		// Asked to authenticate: once, as the challenge says.
		next, err := c.authorize(ctx, ref, resp.Header.Values("WWW-Authenticate"))
		if err != nil || next == "" {
			defer resp.Body.Close()
			if err != nil {
				return nil, err
			}
			return nil, errorOf(ref.Registry, resp)
		}
		resp.Body.Close()
		auth = next
		c.remember(key, auth)
	}
}

func (c *Client) remember(key, auth string) {
	if auth == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.auth == nil {
		c.auth = map[string]string{}
	}
	c.auth[key] = auth
}

// ping asks the registry's /v2/ how it authenticates: the challenges of a
// 401, none for a 200. Any other answer is the registry's error.
func (c *Client) ping(ctx context.Context, ref Ref) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref.scheme()+"://"+ref.Registry+"/v2/", nil)
	if err != nil {
		return nil, err
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var challenges []string
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		challenges = resp.Header.Values("WWW-Authenticate")
	case resp.StatusCode/100 != 2:
		return nil, errorOf(ref.Registry, resp)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBytes))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.challenges == nil {
		c.challenges = map[string][]string{}
	}
	c.challenges[ref.Registry] = challenges
	return challenges, nil
}

func (c *Client) client() *http.Client {
	t := c.Transport
	if t == nil {
		t = http.DefaultTransport
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &http.Client{Transport: budgeted{c, t}, Timeout: timeout}
}

// budgeted counts a client's requests against its budget.
type budgeted struct {
	c    *Client
	next http.RoundTripper
}

func (b budgeted) RoundTrip(req *http.Request) (*http.Response, error) {
	max := b.c.MaxRequests
	if max <= 0 {
		max = DefaultMaxRequests
	}
	b.c.mu.Lock()
	n := b.c.requests
	if n < max {
		b.c.requests++
	}
	b.c.mu.Unlock()
	if n >= max {
		return nil, fmt.Errorf("%w: %d requests made, the most a run makes (%s %s not sent)", ErrRequestBudget, n, req.Method, req.URL.Host)
	}
	return b.next.RoundTrip(req)
}

// Requests is how many requests the client has made.
func (c *Client) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

func (c *Client) credentials(registry string) (Credential, error) {
	if c.Credentials != nil {
		return c.Credentials(registry)
	}
	return DockerCredentials(registry)
}

// authorize answers a 401's challenges: the Authorization header to try
// again with, or "" when there is nothing better to try (basic auth with
// no credentials).
func (c *Client) authorize(ctx context.Context, ref Ref, challenges []string) (string, error) {
	for _, ch := range challenges {
		scheme, params := parseChallenge(ch)
		switch strings.ToLower(scheme) {
		case "bearer":
			cred, err := c.credentials(ref.Registry)
			if err != nil {
				return "", err
			}
			tok, err := c.token(ctx, ref, params, cred)
			if err != nil {
				return "", err
			}
			return "Bearer " + tok, nil
		case "basic":
			cred, err := c.credentials(ref.Registry)
			if err != nil {
				return "", err
			}
			if cred.Username == "" && cred.Password == "" {
				return "", nil
			}
			req, _ := http.NewRequest(http.MethodGet, "/", nil)
			req.SetBasicAuth(cred.Username, cred.Password)
			return req.Header.Get("Authorization"), nil
		}
	}
	return "", nil
}

// token asks the challenge's token server for a pull token of ref's
// repository, anonymously or with cred: a password by basic auth, an
// identity token as an OAuth2 refresh token.
func (c *Client) token(ctx context.Context, ref Ref, params map[string]string, cred Credential) (string, error) {
	realm := params["realm"]
	u, err := url.Parse(realm)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("registry %s: token realm %q is not a URL", ref.Registry, realm)
	}
	scope := "repository:" + ref.Repository + ":pull"
	var req *http.Request
	if cred.IdentityToken != "" {
		form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {cred.IdentityToken}, "scope": {scope}, "client_id": {"benchkite"}}
		if s := params["service"]; s != "" {
			form.Set("service", s)
		}
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		q := u.Query()
		if s := params["service"]; s != "" {
			q.Set("service", s)
		}
		q.Set("scope", scope)
		u.RawQuery = q.Encode()
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return "", err
		}
		if cred.Username != "" || cred.Password != "" {
			req.SetBasicAuth(cred.Username, cred.Password)
		}
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
	resp, err := c.client().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		e := errorOf(u.Host, resp)
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			// The registry's own words: the token server refused us.
			e.Registry = ref.Registry
		}
		return "", e
	}
	var doc struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxTokenBytes)).Decode(&doc); err != nil {
		return "", fmt.Errorf("registry %s: token from %s: %w", ref.Registry, u.Host, err)
	}
	if doc.Token == "" {
		doc.Token = doc.AccessToken
	}
	if doc.Token == "" {
		return "", errors.New("registry " + ref.Registry + ": the token server sent no token")
	}
	return doc.Token, nil
}

// parseChallenge reads `Bearer realm="...",service="..."`.
func parseChallenge(h string) (string, map[string]string) {
	scheme, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	params := map[string]string{}
	for rest = strings.TrimSpace(rest); rest != ""; {
		k, v, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		k = strings.ToLower(strings.TrimSpace(k))
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, `"`) {
			end := 1
			var b strings.Builder
			for end < len(v) && v[end] != '"' {
				if v[end] == '\\' && end+1 < len(v) {
					end++
				}
				b.WriteByte(v[end])
				end++
			}
			params[k] = b.String()
			rest = strings.TrimPrefix(strings.TrimSpace(v[min(end+1, len(v)):]), ",")
		} else {
			val, after, _ := strings.Cut(v, ",")
			params[k] = strings.TrimSpace(val)
			rest = after
		}
		rest = strings.TrimSpace(rest)
	}
	return scheme, params
}
