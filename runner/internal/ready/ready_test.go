package ready

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/testutil"
)

// fakeServer answers /health with healthStatus and /v1/models with
// models, counting health probes.
type fakeServer struct {
	*httptest.Server
	healthStatus atomic.Int32
	modelsStatus atomic.Int32
	models       string
	probes       atomic.Int32
	firstProbe   chan struct{}
	once         sync.Once
}

func newFakeServer(t testing.TB, health int, models string) *fakeServer {
	s := &fakeServer{models: models, firstProbe: make(chan struct{})}
	s.healthStatus.Store(int32(health))
	s.modelsStatus.Store(http.StatusOK)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		s.probes.Add(1)
		s.once.Do(func() { close(s.firstProbe) })
		w.WriteHeader(int(s.healthStatus.Load()))
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(s.modelsStatus.Load()))
		fmt.Fprint(w, s.models)
	})
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

const modelList = `{"object":"list","data":[{"id":"org/model","object":"model","root":"/models/org/model"},{"id":"other","object":"model"}]}`

// result runs Wait in the background so that a broken Wait fails the test
// instead of hanging it.
func result(t *testing.T, ctx context.Context, opts Options) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- Wait(ctx, opts) }()
	select {
	case err := <-errc:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Wait did not return")
		return nil
	}
}

func TestWaitReadyAfterUnhealthyAnswers(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, http.StatusServiceUnavailable, modelList)
	go func() {
		<-srv.firstProbe
		for srv.probes.Load() < 3 {
			time.Sleep(time.Millisecond)
		}
		srv.healthStatus.Store(http.StatusOK)
	}()
	err := result(t, context.Background(), Options{BaseURL: srv.URL + "/", Model: "org/model", Interval: 5 * time.Millisecond})
	if err != nil {
		t.Fatalf("Wait() error = %v", err)
	}
	if got := srv.probes.Load(); got < 4 {
		t.Errorf("Wait() returned after %d probes, want at least 4", got)
	}
}

func TestWaitTreatsConnectionRefusedAsNotYet(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, http.StatusOK, modelList)
	var dials atomic.Int32
	transport := &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if dials.Add(1) <= 3 {
				return nil, &net.OpError{Op: "dial", Net: network, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
			}
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}
	opts := Options{BaseURL: srv.URL, Model: "org/model", Interval: time.Millisecond, Client: &http.Client{Transport: transport}}
	if err := result(t, context.Background(), opts); err != nil {
		t.Fatalf("Wait() error = %v", err)
	}
	if got := dials.Load(); got < 4 {
		t.Errorf("dials = %d, want at least 4", got)
	}
}

func TestWaitFails(t *testing.T) {
	t.Parallel()
	refused := closedPortURL(t)
	tests := []struct {
		name     string
		health   int
		models   string
		mStatus  int
		model    string
		baseURL  string // defaults to the fake server
		timeout  time.Duration
		wantIs   error
		wantText string
	}{
		{
			name: "timeout while unhealthy", health: http.StatusServiceUnavailable, timeout: 50 * time.Millisecond,
			wantIs: ErrTimeout, wantText: "(last: /health answered 503 Service Unavailable)",
		},
		{
			name: "timeout while refused", baseURL: refused, timeout: 50 * time.Millisecond,
			wantIs: ErrTimeout, wantText: "(last: connection refused)",
		},
		{
			name: "model missing", health: http.StatusOK, models: modelList, model: "org/other",
			wantIs: ErrModelNotServed, wantText: `lists "org/model", "other", not "org/other"`,
		},
		{
			name: "empty model list", health: http.StatusOK, models: `{"data":[]}`, model: "m",
			wantIs: ErrModelNotServed, wantText: `lists none, not "m"`,
		},
		{
			name: "models endpoint missing", health: http.StatusOK, mStatus: http.StatusNotFound, model: "m",
			wantText: "/v1/models answered 404 Not Found",
		},
		{
			name: "models not JSON", health: http.StatusOK, models: "<html>", model: "m",
			wantText: "decode GET",
		},
		{
			name: "models failing until timeout", health: http.StatusOK, mStatus: http.StatusInternalServerError,
			model: "m", timeout: 50 * time.Millisecond,
			wantIs: ErrTimeout, wantText: "(last: /v1/models answered 500 Internal Server Error)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, tt.health, tt.models)
			if tt.mStatus != 0 {
				srv.modelsStatus.Store(int32(tt.mStatus))
			}
			base := srv.URL
			if tt.baseURL != "" {
				base = tt.baseURL
			}
			err := result(t, context.Background(), Options{
				BaseURL: base, Model: tt.model, Interval: 5 * time.Millisecond, Timeout: tt.timeout,
			})
			if err == nil {
				t.Fatal("Wait() error = nil, want one")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Wait() error = %v, want errors.Is %v", err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Wait() error = %q, want it to contain %q", err, tt.wantText)
			}
		})
	}
}

// closedPortURL returns a loopback URL on which nothing listens.
func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

func TestWaitServerExited(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		exitErr  func() error
		wantText string
	}{
		{
			name:     "with reason",
			exitErr:  func() error { return errors.New("vllm exited with code 1") },
			wantText: "ready: server exited before it was ready: vllm exited with code 1",
		},
		{name: "without reason", wantText: "ready: server exited before it was ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newFakeServer(t, http.StatusServiceUnavailable, "")
			exited := make(chan struct{})
			go func() {
				<-srv.firstProbe
				close(exited)
			}()
			// A long interval and timeout: only the exit can end the wait.
			err := result(t, context.Background(), Options{
				BaseURL: srv.URL, Interval: MaxInterval, Timeout: time.Hour, Exited: exited, ExitErr: tt.exitErr,
			})
			if !errors.Is(err, ErrServerExited) {
				t.Fatalf("Wait() error = %v, want ErrServerExited", err)
			}
			if got := err.Error(); got != tt.wantText {
				t.Errorf("Wait() error = %q, want %q", got, tt.wantText)
			}
		})
	}
}

// A server that dies while a probe hangs must not keep Wait in that probe.
func TestWaitServerExitedMidRequest(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	entered := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(entered) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)

	exited := make(chan struct{})
	go func() {
		<-entered
		close(exited)
	}()
	err := result(t, context.Background(), Options{
		BaseURL: srv.URL, Exited: exited, Client: &http.Client{Timeout: time.Hour},
	})
	if !errors.Is(err, ErrServerExited) {
		t.Errorf("Wait() error = %v, want ErrServerExited", err)
	}
}

func TestWaitContextCanceled(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, http.StatusServiceUnavailable, "")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-srv.firstProbe
		cancel()
	}()
	err := result(t, ctx, Options{BaseURL: srv.URL, Interval: 5 * time.Millisecond})
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Errorf("Wait() error = %v, want context.Canceled only", err)
	}
}

func TestWaitReportsProgress(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, http.StatusServiceUnavailable, `{"data":[{"id":"org/model"}]}`)
	var progress testutil.SyncBuffer
	go func() {
		for strings.Count(progress.String(), "\n") < 2 {
			time.Sleep(time.Millisecond)
		}
		srv.healthStatus.Store(http.StatusOK)
	}()
	err := result(t, context.Background(), Options{
		BaseURL: srv.URL, Model: "org/model", Interval: 5 * time.Millisecond, Timeout: time.Hour, Progress: &progress, ProgressEvery: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatalf("Wait() error = %v", err)
	}
	line := regexp.MustCompile(`^runner: waiting \d+s of 1h00m00s for the server to serve org/model at ` + regexp.QuoteMeta(srv.URL) + `/health \(last probe: /health answered 503 Service Unavailable\)$`)
	lines := strings.Split(strings.TrimSuffix(progress.String(), "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("progress = %q, want at least two lines", progress.String())
	}
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("progress line %q does not match %s", l, line)
		}
	}
}

func TestWaitRejectsBadOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		opts     Options
		wantText string
	}{
		{name: "no base URL", opts: Options{}, wantText: `base URL "" is not an absolute http URL`},
		{name: "relative base URL", opts: Options{BaseURL: "127.0.0.1:8000"}, wantText: "not an absolute http URL"},
		{name: "interval too long", opts: Options{BaseURL: "http://127.0.0.1:1", Interval: 2 * time.Second}, wantText: "interval 2s is outside (0, 1s]"},
		{name: "negative interval", opts: Options{BaseURL: "http://127.0.0.1:1", Interval: -time.Second}, wantText: "interval -1s is outside"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Wait(context.Background(), tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Wait() error = %v, want it to contain %q", err, tt.wantText)
			}
		})
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{45 * time.Second: "45s", 245 * time.Second: "4m05s", 62 * time.Minute: "1h02m00s", 1400 * time.Millisecond: "1s"} {
		if got := clock(d); got != want {
			t.Errorf("clock(%s) = %q, want %q", d, got, want)
		}
	}
}
