package oci

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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
