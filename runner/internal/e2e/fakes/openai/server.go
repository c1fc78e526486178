package openai

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// shutdownGrace bounds how long Close waits for in-flight requests.
const shutdownGrace = 5 * time.Second

// Server runs the fake API on a loopback TCP address.
type Server struct {
	h       *handler
	delay   time.Duration
	done    chan struct{}
	died    atomic.Bool
	mu      sync.Mutex
	srv     *http.Server
	ln      net.Listener
	started bool
	close   sync.Once
}

// NewHandler is the server's HTTP handler alone, for tests that serve it
// themselves (httptest) and look at the requests on the way.
func NewHandler(cfg Config) http.Handler { return newHandler(cfg, nil) }

// NewServer returns a server for cfg; call Start to listen.
func NewServer(cfg Config) *Server {
	s := &Server{delay: cfg.StartupDelay, done: make(chan struct{})}
	s.h = newHandler(cfg, s.die)
	return s
}

// Start waits Config.StartupDelay, then listens on addr (use port 0 to
// pick a free port) and serves in the background until ctx is cancelled,
// Close is called, or the DieAfterRequests fault fires. Only loopback
// addresses are accepted.
func (s *Server) Start(ctx context.Context, addr string) error {
	if err := checkLoopback(addr); err != nil {
		return err
	}
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("fake vllm server: already started")
	}
	s.started = true
	s.mu.Unlock()

	if err := sleep(ctx, s.delay); err != nil {
		return fmt.Errorf("fake vllm server: startup: %w", err)
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("fake vllm server: %w", err)
	}
	srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute}
	s.mu.Lock()
	s.srv, s.ln = srv, ln
	s.mu.Unlock()

	go func() {
		srv.Serve(ln)
		close(s.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			s.Close()
		case <-s.done:
		}
	}()
	return nil
}

// Addr is the address the server listens on, e.g. "127.0.0.1:40123".
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// URL is the base URL, e.g. "http://127.0.0.1:40123".
func (s *Server) URL() string { return "http://" + s.Addr() }

// Done is closed when the server has stopped serving.
func (s *Server) Done() <-chan struct{} { return s.done }

// Died reports whether the server stopped because of the DieAfterRequests
// fault rather than Close.
func (s *Server) Died() bool { return s.died.Load() }

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Stats { return s.h.Stats() }

// Close stops the server, giving in-flight requests a short grace period.
// It is safe to call more than once and before Start.
func (s *Server) Close() error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	var err error
	s.close.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if shutdownErr := srv.Shutdown(ctx); shutdownErr != nil {
			err = errors.Join(shutdownErr, srv.Close())
		}
	})
	return err
}

// die is the DieAfterRequests fault: drop everything at once, as a crashed
// engine process would.
func (s *Server) die() {
	s.died.Store(true)
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv != nil {
		go srv.Close()
	}
}

func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("fake vllm server: address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("fake vllm server: refusing non-loopback address %q", addr)
}
