// Package bkapi is a small client for the parts of the Buildkite REST API
// the runner needs: past scheduled builds of a pipeline, their artifacts,
// and creating builds, with per-request contexts, bounded retries, typed
// errors and care for the API token: the token is sent only to the API
// host and never appears in errors or logs. It speaks the REST API itself
// (rest.go): the few calls it makes did not warrant a client library on
// every build's critical path.
package bkapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Defaults for zero Config fields.
const (
	DefaultBaseURL    = "https://api.buildkite.com/"
	DefaultTimeout    = 30 * time.Second
	DefaultRetries    = 3
	DefaultRetryDelay = 500 * time.Millisecond
	DefaultMaxPages   = 10

	perPage       = 100 // the API's maximum page size
	maxRetryDelay = 30 * time.Second
	userAgent     = "benchkite"
	// maxRateLimitWait bounds the wait a 429 asks for: Buildkite's limit
	// resets within its window of a minute; a longer answer is waited
	// for up to this, within the caller's deadline.
	maxRateLimitWait = 5 * time.Minute
)

// Config configures a Client. Only Token, Org and Pipeline are required.
type Config struct {
	BaseURL  string // API root; DefaultBaseURL when empty
	Token    string // API access token
	Org      string // organization slug
	Pipeline string // pipeline slug
	// HTTPClient supplies the transport (proxies, TLS) and redirect policy;
	// a Timeout on it, if shorter than Timeout, bounds each attempt.
	HTTPClient *http.Client
	// Timeout bounds each attempt of a request; DefaultTimeout when zero.
	Timeout time.Duration
	// Retries is how many times a transient failure (5xx, 429, timeout,
	// network error) is retried; DefaultRetries when zero, none when
	// negative. 401, 403 and 404 are never retried.
	Retries int
	// RetryDelay is the wait before the first retry, doubled for each
	// further one; DefaultRetryDelay when zero.
	RetryDelay time.Duration
	// MaxRetryDelay caps that doubling; 30 s when zero. A rate-limited
	// request (429) waits what the API asks instead, up to 5 minutes.
	MaxRetryDelay time.Duration
	// MaxPages bounds the build list pages read by ListScheduledBuilds;
	// DefaultMaxPages when zero.
	MaxPages int
	// Logger receives retry warnings; nothing is logged when nil.
	Logger *slog.Logger
}

// String hides the token, should a Config ever be printed.
func (c Config) String() string {
	tok := ""
	if c.Token != "" {
		tok = "[REDACTED]"
	}
	return fmt.Sprintf("bkapi.Config{BaseURL: %q, Token: %q, Org: %q, Pipeline: %q}", c.BaseURL, tok, c.Org, c.Pipeline)
}

// GoString hides the token from %#v too.
func (c Config) GoString() string { return c.String() }

// Client talks to the REST API on behalf of one pipeline.
// It is safe for concurrent use.
type Client struct {
	cfg      Config
	base     *url.URL
	next     http.RoundTripper
	redirect func(*http.Request, []*http.Request) error
	timeout  time.Duration
	retries  int
	log      *slog.Logger
	rate     *rateGate
}

// New checks cfg, fills in defaults and returns a Client. A missing token
// is reported as ErrNoToken.
func New(cfg Config) (*Client, error) {
	if cfg.Token == "" {
		return nil, fmt.Errorf("new Buildkite API client: %w", ErrNoToken)
	}
	if cfg.Org == "" || cfg.Pipeline == "" {
		return nil, fmt.Errorf("new Buildkite API client: organization and pipeline slugs are required (got %q and %q)", cfg.Org, cfg.Pipeline)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, fmt.Errorf("new Buildkite API client: base URL %q is not an absolute URL", cfg.BaseURL)
	}
	if base.Path == "" || base.Path[len(base.Path)-1] != '/' {
		base.Path += "/" // relative API paths resolve under it
	}
	cfg.BaseURL = base.String()

	c := &Client{
		cfg:     cfg,
		base:    base,
		next:    http.DefaultTransport,
		timeout: cfg.Timeout,
		retries: cfg.Retries,
		log:     cfg.Logger,
		rate:    &rateGate{},
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if hc := cfg.HTTPClient; hc != nil {
		if hc.Transport != nil {
			c.next = hc.Transport
		}
		c.redirect = hc.CheckRedirect
		if hc.Timeout > 0 && hc.Timeout < c.timeout {
			c.timeout = hc.Timeout
		}
	}
	switch {
	case c.retries == 0:
		c.retries = DefaultRetries
	case c.retries < 0:
		c.retries = 0
	}
	if c.cfg.RetryDelay <= 0 {
		c.cfg.RetryDelay = DefaultRetryDelay
	}
	if c.cfg.MaxPages <= 0 {
		c.cfg.MaxPages = DefaultMaxPages
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Org returns the organization slug.
func (c *Client) Org() string { return c.cfg.Org }

// Pipeline returns the pipeline slug.
func (c *Client) Pipeline() string { return c.cfg.Pipeline }

// api returns the REST API under ctx, which rides in the transport so
// that redirects carry it too.
func (c *Client) api(ctx context.Context) *rest {
	hc := &http.Client{
		Transport:     &transport{ctx: ctx, next: c.next, api: c.base, rate: c.rate},
		CheckRedirect: c.redirect,
	}
	return &rest{c: c, hc: hc}
}

// do runs call with a per-attempt timeout and retries transient failures
// with exponential backoff. Only idempotent calls are retried after a
// failure that may have reached the server. The returned error names what
// and never contains the token.
func (c *Client) do(ctx context.Context, what string, idempotent bool, call func(*rest) error) error {
	delay := c.cfg.RetryDelay
	for attempt := 0; ; attempt++ {
		err := c.attempt(ctx, call)
		if err == nil {
			return nil
		}
		if attempt >= c.retries || !retryable(err, idempotent) {
			return redactErr(fmt.Errorf("%s: %w", what, err), c.cfg.Token)
		}
		wait := min(delay, c.maxRetryDelay())
		var se *StatusError
		if errors.As(err, &se) && se.StatusCode == http.StatusTooManyRequests && se.RetryAfter > 0 {
			// The limit is spent until the reset: asking sooner only
			// collects another 429, and every night fetched after it.
			wait = max(wait, min(se.RetryAfter, maxRateLimitWait))
			c.rate.close(wait)
		} else if se != nil && se.RetryAfter > wait {
			wait = min(se.RetryAfter, c.maxRetryDelay())
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return redactErr(fmt.Errorf("%s: the API asks to wait %s, past this step's deadline: %w", what, wait.Round(time.Second), err), c.cfg.Token)
		}
		c.log.Warn("buildkite API request failed, retrying",
			"request", what, "attempt", attempt+1, "attempts", c.retries+1,
			"wait", wait, "error", redact(err.Error(), c.cfg.Token))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return redactErr(fmt.Errorf("%s: gave up waiting to retry: %w (last error: %w)", what, context.Cause(ctx), err), c.cfg.Token)
		case <-t.C:
		}
		delay *= 2
	}
}

func (c *Client) maxRetryDelay() time.Duration {
	if c.cfg.MaxRetryDelay > 0 {
		return c.cfg.MaxRetryDelay
	}
	return maxRetryDelay
}

func (c *Client) attempt(ctx context.Context, call func(*rest) error) error {
	actx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	err := call(c.api(actx))
	if err == nil {
		return nil
	}
	return c.classify(ctx, actx, err)
}

// classify turns what the API and net/http return into this package's
// errors.
func (c *Client) classify(parent, attempt context.Context, err error) error {
	var se *StatusError
	var ue *url.Error
	switch {
	case errors.As(err, &se):
		return se
	case parent.Err() != nil:
		return fmt.Errorf("request abandoned: %w", context.Cause(parent))
	case errors.Is(attempt.Err(), context.DeadlineExceeded):
		return fmt.Errorf("%w: no response within %s", ErrUnavailable, c.timeout)
	case errors.As(err, &ue):
		u, _ := url.Parse(ue.URL)
		return fmt.Errorf("%w: %s %s: %w", ErrUnavailable, ue.Op, stripQuery(u), ue.Err)
	}
	return err
}

func retryable(err error, idempotent bool) bool {
	var se *StatusError
	if errors.As(err, &se) {
		// A 429 was refused before any work, so even a create may retry.
		return se.StatusCode == http.StatusTooManyRequests || (idempotent && se.StatusCode >= 500)
	}
	if !errors.Is(err, ErrUnavailable) {
		return false
	}
	if idempotent {
		return true
	}
	// A failed dial never reached the server.
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func sameOrigin(a, b *url.URL) bool {
	return a.Scheme == b.Scheme && a.Host == b.Host
}

// transport puts the attempt's context on every request, including
// redirects, drops the Authorization header on requests that leave the API
// origin (artifact downloads redirect to storage), and turns 429 into an
// error so that do handles the wait.
type transport struct {
	ctx  context.Context
	next http.RoundTripper
	api  *url.URL
	rate *rateGate
}

// rateGate holds API requests back while Buildkite's rate limit is spent:
// an answer with RateLimit-Remaining 0 closes it for RateLimit-Reset
// seconds, so that a long fetch paces itself instead of collecting 429s.
type rateGate struct {
	mu    sync.Mutex
	until time.Time
}

func (g *rateGate) wait(ctx context.Context) error {
	g.mu.Lock()
	d := time.Until(g.until)
	g.mu.Unlock()
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// close holds requests back for d.
func (g *rateGate) close(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if until := time.Now().Add(d); until.After(g.until) {
		g.until = until
	}
}

func (g *rateGate) observe(h http.Header) {
	remaining, err := strconv.Atoi(h.Get("RateLimit-Remaining"))
	if err != nil || remaining > 0 {
		return
	}
	reset, err := strconv.Atoi(h.Get("RateLimit-Reset"))
	if err != nil || reset < 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if until := time.Now().Add(time.Duration(reset) * time.Second); until.After(g.until) {
		g.until = until
	}
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	api := sameOrigin(req.URL, t.api)
	if api && t.rate != nil {
		if err := t.rate.wait(t.ctx); err != nil {
			return nil, err
		}
	}
	var out *http.Request
	if !sameOrigin(req.URL, t.api) && req.Header.Get("Authorization") != "" {
		out = req.Clone(t.ctx)
		out.Header.Del("Authorization")
	} else {
		out = req.WithContext(t.ctx)
	}
	resp, err := t.next.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	if api && t.rate != nil {
		t.rate.observe(resp.Header)
	}
	if resp.StatusCode == http.StatusTooManyRequests {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		return nil, &StatusError{
			Method:      req.Method,
			URL:         stripQuery(req.URL),
			StatusCode:  resp.StatusCode,
			Message:     "rate limited",
			RetryAfter:  retryAfter(resp.Header),
			FromStorage: !sameOrigin(req.URL, t.api),
		}
	}
	return resp, nil
}

// retryAfter reads the wait the server asks for: Retry-After, or
// Buildkite's RateLimit-Reset, both in seconds.
func retryAfter(h http.Header) time.Duration {
	for _, name := range []string{"Retry-After", "RateLimit-Reset"} {
		if s, err := strconv.Atoi(h.Get(name)); err == nil && s > 0 {
			return time.Duration(s) * time.Second
		}
	}
	return 0
}
