// Package ready waits for a vLLM server to accept requests.
//
// It polls GET /health until it answers 200, then checks that GET
// /v1/models lists the expected model. It gives up at once when the server
// process ends, rather than at the timeout.
package ready

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"
)

var (
	// ErrServerExited means the server process ended before it was ready.
	ErrServerExited = errors.New("server exited before it was ready")
	// ErrTimeout means the server was not ready within Options.Timeout.
	ErrTimeout = errors.New("server not ready in time")
	// ErrModelNotServed means the server is up but does not list the model.
	ErrModelNotServed = errors.New("model not served")
)

const (
	// DefaultInterval is the time between two health probes.
	DefaultInterval = 500 * time.Millisecond
	// MaxInterval is the longest interval Wait accepts, so that readiness
	// costs the benchmark at most a second.
	MaxInterval = time.Second
	// DefaultProgressEvery is how often Wait reports that it still waits:
	// often enough that a long load does not look dead.
	DefaultProgressEvery = 30 * time.Second
	// requestTimeout bounds one probe when Options.Client has no timeout.
	requestTimeout = 10 * time.Second
)

// Options configure Wait.
type Options struct {
	// BaseURL is the server root, e.g. "http://127.0.0.1:8000".
	BaseURL string
	// Model is the served model name that /v1/models must list; empty
	// skips that check.
	Model string
	// Interval is the time between probes; zero means DefaultInterval.
	// It may not exceed MaxInterval.
	Interval time.Duration
	// Timeout bounds the whole wait; zero means only ctx bounds it.
	Timeout time.Duration
	// Progress, when set, receives a line every ProgressEvery while Wait
	// waits.
	Progress io.Writer
	// ProgressEvery is the time between progress lines; zero means
	// DefaultProgressEvery.
	ProgressEvery time.Duration
	// Exited, when set, is closed when the server process has ended
	// (proc.Process.Done); Wait then fails with ErrServerExited.
	Exited <-chan struct{}
	// ExitErr, when set, tells why the server ended (proc.Process.Wait);
	// it is called only after Exited is closed.
	ExitErr func() error
	// Client makes the requests; nil means a client with a per-request
	// timeout.
	Client *http.Client
}

// Wait returns nil once the server answers /health with 200 and lists
// opts.Model. Until then a refused connection or a non-200 answer means
// "not yet". It fails with ErrServerExited as soon as opts.Exited is
// closed, with ErrTimeout after opts.Timeout, with ErrModelNotServed when
// the model list lacks opts.Model, and with ctx's error when ctx ends.
func Wait(ctx context.Context, opts Options) error {
	w, err := newWaiter(opts)
	if err != nil {
		return err
	}
	return w.wait(ctx)
}

type waiter struct {
	opts      Options
	baseURL   string
	healthURL string
	modelsURL string
	client    *http.Client
	start     time.Time
	last      string // what the last probe saw, for the timeout error
}

func newWaiter(opts Options) (*waiter, error) {
	base, err := url.Parse(strings.TrimRight(opts.BaseURL, "/"))
	if err != nil || base.Scheme == "" || base.Host == "" {
		return nil, fmt.Errorf("ready: base URL %q is not an absolute http URL", opts.BaseURL)
	}
	if opts.Interval == 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Interval < 0 || opts.Interval > MaxInterval {
		return nil, fmt.Errorf("ready: interval %s is outside (0, %s]", opts.Interval, MaxInterval)
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = DefaultProgressEvery
	}
	client := opts.Client
	if client == nil {
		client = &http.Client{Timeout: requestTimeout}
	}
	return &waiter{
		opts:      opts,
		baseURL:   base.String(),
		healthURL: base.String() + "/health",
		modelsURL: base.String() + "/v1/models",
		client:    client,
		last:      "no answer yet",
	}, nil
}

func (w *waiter) wait(parent context.Context) error {
	w.start = time.Now()
	ctx := parent
	if w.opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, w.opts.Timeout, ErrTimeout)
		defer cancel()
	}
	// A dead server must end the wait at once, even mid-request.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if w.opts.Exited != nil {
		go func() {
			select {
			case <-w.opts.Exited:
				cancel(ErrServerExited)
			case <-ctx.Done():
			}
		}()
	}

	tick := time.NewTicker(w.opts.Interval)
	defer tick.Stop()
	progress := time.NewTicker(w.opts.ProgressEvery)
	defer progress.Stop()
	for {
		done, err := w.probe(ctx)
		if w.exited() {
			return w.exitedError()
		}
		if done || err != nil {
			return err
		}
	sleep:
		for {
			select {
			case <-ctx.Done():
				return w.fail(ctx)
			case <-progress.C:
				w.reportProgress()
			case <-tick.C:
				break sleep
			}
		}
	}
}

func (w *waiter) exited() bool {
	if w.opts.Exited == nil {
		return false
	}
	select {
	case <-w.opts.Exited:
		return true
	default:
		return false
	}
}

func (w *waiter) exitedError() error {
	var why error
	if w.opts.ExitErr != nil {
		why = w.opts.ExitErr()
	}
	if why == nil {
		return fmt.Errorf("ready: %w", ErrServerExited)
	}
	return fmt.Errorf("ready: %w: %w", ErrServerExited, why)
}

func (w *waiter) fail(ctx context.Context) error {
	if w.exited() {
		return w.exitedError()
	}
	cause := context.Cause(ctx)
	if errors.Is(cause, ErrTimeout) {
		return fmt.Errorf("ready: %w: %s after %s (last: %s)", ErrTimeout, w.baseURL, w.opts.Timeout, w.last)
	}
	return fmt.Errorf("ready: wait for %s (last: %s): %w", w.healthURL, w.last, cause)
}

func (w *waiter) reportProgress() {
	if w.opts.Progress == nil {
		return
	}
	elapsed := time.Since(w.start).Round(time.Second)
	limit := ""
	if w.opts.Timeout > 0 {
		limit = " of " + clock(w.opts.Timeout)
	}
	what := "the server"
	if w.opts.Model != "" {
		what += " to serve " + w.opts.Model
	}
	fmt.Fprintf(w.opts.Progress, "runner: waiting %s%s for %s at %s (last probe: %s)\n", clock(elapsed), limit, what, w.healthURL, w.last)
}

// clock is a duration as people read a wait: "4m05s", "1h02m00s", "45s".
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	h, m, s := int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60
	switch {
	case h > 0:
		return fmt.Sprintf("%dh%02dm%02ds", h, m, s)
	case m > 0:
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// probe asks /health and, once it answers 200, /v1/models. It returns
// done when the server is ready, and an error only for a problem that
// waiting longer cannot fix.
func (w *waiter) probe(ctx context.Context) (done bool, err error) {
	status, _, err := w.get(ctx, w.healthURL)
	switch {
	case ctx.Err() != nil:
		return false, nil // ended by the wait itself; keep what the server last said
	case err != nil:
		w.last = describe(err)
		return false, nil
	case status != http.StatusOK:
		w.last = fmt.Sprintf("/health answered %d %s", status, http.StatusText(status))
		return false, nil
	}
	if w.opts.Model == "" {
		return true, nil
	}
	return w.checkModel(ctx)
}

func (w *waiter) checkModel(ctx context.Context) (bool, error) {
	status, body, err := w.get(ctx, w.modelsURL)
	switch {
	case ctx.Err() != nil:
		return false, nil
	case err != nil:
		w.last = "/v1/models: " + describe(err)
		return false, nil
	case status >= 500:
		w.last = fmt.Sprintf("/v1/models answered %d %s", status, http.StatusText(status))
		return false, nil
	case status != http.StatusOK:
		return false, fmt.Errorf("ready: GET %s answered %d %s", w.modelsURL, status, http.StatusText(status))
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return false, fmt.Errorf("ready: decode GET %s: %w", w.modelsURL, err)
	}
	var ids []string
	for _, m := range list.Data {
		if m.ID == w.opts.Model {
			return true, nil
		}
		ids = append(ids, fmt.Sprintf("%q", m.ID))
	}
	served := "none"
	if len(ids) > 0 {
		served = strings.Join(ids, ", ")
	}
	return false, fmt.Errorf("ready: %w: %s lists %s, not %q", ErrModelNotServed, w.modelsURL, served, w.opts.Model)
}

// maxBody bounds what is read of an answer; a model list is small.
const maxBody = 1 << 20

func (w *waiter) get(ctx context.Context, u string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, body, nil
}

// describe shortens the usual "not yet" error for the timeout message.
func describe(err error) string {
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "connection refused"
	}
	return err.Error()
}
