package bkapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
)

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     bkapi.Config
		wantIs  error
		wantMsg string
	}{
		{
			name:   "no token",
			cfg:    bkapi.Config{Org: testOrg, Pipeline: testPipeline},
			wantIs: bkapi.ErrNoToken,
		},
		{
			name:    "no pipeline",
			cfg:     bkapi.Config{Token: testToken, Org: testOrg},
			wantMsg: "organization and pipeline slugs are required",
		},
		{
			name:    "relative base URL",
			cfg:     bkapi.Config{BaseURL: "api.buildkite.com", Token: testToken, Org: testOrg, Pipeline: testPipeline},
			wantMsg: "is not an absolute URL",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := bkapi.New(tt.cfg)
			if err == nil {
				t.Fatalf("New(%v) error = nil, want one", tt.cfg)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("New(%v) error = %v, want errors.Is %v", tt.cfg, err, tt.wantIs)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("New(%v) error = %q, want it to contain %q", tt.cfg, err, tt.wantMsg)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Errorf("New(%v) error = %q contains the token", tt.cfg, err)
			}
		})
	}
}

func TestConfigStringHidesToken(t *testing.T) {
	t.Parallel()
	cfg := bkapi.Config{Token: testToken, Org: testOrg, Pipeline: testPipeline}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%s", cfg), fmt.Sprintf("%#v", cfg)} {
		if strings.Contains(s, testToken) {
			t.Errorf("printed Config %q contains the token", s)
		}
	}
}

// failing answers the first n requests to the API host with status and
// body, then lets the server answer.
func failing(n int64, status int, body string) func(http.ResponseWriter, *http.Request) bool {
	var seen atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) bool {
		if seen.Add(1) > n {
			return false
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
		return true
	}
}

// hanging never answers; it returns once the client gives up.
func hanging(w http.ResponseWriter, r *http.Request) bool {
	<-r.Context().Done()
	return true
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		token        string
		pipeline     string
		intercept    func(http.ResponseWriter, *http.Request) bool
		retries      int
		timeout      time.Duration
		wantErr      bool
		wantIs       []error
		wantNotIs    []error
		wantMsg      []string
		wantRequests int
	}{
		{
			name:         "401 is not retried and hints at scopes",
			token:        "bkua_wrong",
			wantErr:      true,
			wantIs:       []error{bkapi.ErrUnauthorized},
			wantNotIs:    []error{bkapi.ErrNotFound, bkapi.ErrUnavailable},
			wantMsg:      []string{"status 401", "Authentication required", "read_builds and read_artifacts scopes"},
			wantRequests: 1,
		},
		{
			name:         "403 is unauthorized too",
			intercept:    failing(1, 403, `{"message":"Your access token does not have the read_builds scope"}`),
			wantErr:      true,
			wantIs:       []error{bkapi.ErrUnauthorized},
			wantMsg:      []string{"status 403", "read_builds scope"},
			wantRequests: 1,
		},
		{
			name:         "404 is not retried and hints at slugs",
			pipeline:     "no-such-pipeline",
			wantErr:      true,
			wantIs:       []error{bkapi.ErrNotFound},
			wantNotIs:    []error{bkapi.ErrUnauthorized, bkapi.ErrUnavailable},
			wantMsg:      []string{"status 404", "No pipeline found", "check the organization and pipeline slugs"},
			wantRequests: 1,
		},
		{
			name:         "5xx then success is retried",
			intercept:    failing(2, 502, `{"message":"Bad Gateway"}`),
			wantRequests: 3,
		},
		{
			name:         "5xx beyond the retries gives up",
			intercept:    failing(100, 503, `{"message":"Service Unavailable"}`),
			retries:      2,
			wantErr:      true,
			wantIs:       []error{bkapi.ErrUnavailable},
			wantMsg:      []string{"status 503"},
			wantRequests: 3,
		},
		{
			name:         "429 is retried",
			intercept:    failing(1, 429, `{"message":"Too Many Requests"}`),
			wantRequests: 2,
		},
		{
			name:      "timeout is retried a bounded number of times",
			intercept: hanging,
			retries:   1,
			// Long enough for the retry to reach the server on a loaded
			// machine under -race.
			timeout:      500 * time.Millisecond,
			wantErr:      true,
			wantIs:       []error{bkapi.ErrUnavailable},
			wantMsg:      []string{"no response within 500ms"},
			wantRequests: 2,
		},
		{
			name:         "negative retries means one attempt",
			intercept:    failing(1, 500, `{"message":"oops"}`),
			retries:      -1,
			wantErr:      true,
			wantIs:       []error{bkapi.ErrUnavailable},
			wantRequests: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
			srv.AddBuild(bkapitest.Build{Number: 1})
			if tt.intercept != nil {
				srv.Intercept(tt.intercept)
			}
			c := newClient(t, srv, func(cfg *bkapi.Config) {
				if tt.token != "" {
					cfg.Token = tt.token
				}
				if tt.pipeline != "" {
					cfg.Pipeline = tt.pipeline
				}
				cfg.Retries = tt.retries
				if tt.timeout != 0 {
					cfg.Timeout = tt.timeout
				}
			})

			got, err := c.ListScheduledBuilds(context.Background(), "main", 5)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("ListScheduledBuilds() error = %v, want error %v", err, tt.wantErr)
			}
			if err == nil && len(got) != 1 {
				t.Errorf("ListScheduledBuilds() returned %d builds, want 1", len(got))
			}
			for _, target := range tt.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("ListScheduledBuilds() error = %v, want errors.Is %v", err, target)
				}
			}
			for _, target := range tt.wantNotIs {
				if errors.Is(err, target) {
					t.Errorf("ListScheduledBuilds() error = %v, want not errors.Is %v", err, target)
				}
			}
			for _, s := range tt.wantMsg {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("ListScheduledBuilds() error = %q, want it to contain %q", err, s)
				}
			}
			if n := len(srv.Requests()); n != tt.wantRequests {
				t.Errorf("server got %d requests, want %d", n, tt.wantRequests)
			}
		})
	}
}

func TestCanceledContextStopsRetries(t *testing.T) {
	t.Parallel()
	srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
	ctx, cancel := context.WithCancel(context.Background())
	srv.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		cancel()
		return hanging(w, r)
	})
	c := newClient(t, srv, func(cfg *bkapi.Config) { cfg.Retries = 5 })

	_, err := c.ListScheduledBuilds(ctx, "main", 1)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("ListScheduledBuilds() error = %v, want errors.Is context.Canceled", err)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("server got %d requests, want 1", n)
	}
}

func TestCreateBuildRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		intercept    func(http.ResponseWriter, *http.Request) bool
		wantErr      bool
		wantCreated  int
		wantRequests int
	}{
		{
			// The build may have been created; a retry could start a second.
			name:         "5xx is not retried",
			intercept:    failing(1, 502, `{"message":"Bad Gateway"}`),
			wantErr:      true,
			wantRequests: 1,
		},
		{
			name:         "429 is retried",
			intercept:    failing(1, 429, `{"message":"Too Many Requests"}`),
			wantCreated:  1,
			wantRequests: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
			srv.Intercept(tt.intercept)
			c := newClient(t, srv, nil)

			_, err := c.CreateBuild(context.Background(), bkapi.CreateBuildRequest{Branch: "main", Commit: "HEAD", Message: "m"})
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("CreateBuild() error = %v, want error %v", err, tt.wantErr)
			}
			if n := len(srv.Created()); n != tt.wantCreated {
				t.Errorf("server created %d builds, want %d", n, tt.wantCreated)
			}
			if n := len(srv.Requests()); n != tt.wantRequests {
				t.Errorf("server got %d requests, want %d", n, tt.wantRequests)
			}
		})
	}
}

// The server echoes the Authorization header into its error messages, as
// a careless proxy might; neither errors nor retry logs may carry it.
func TestTokenNotLeaked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
	}{
		{name: "in a 401", status: 401},
		{name: "in retried 500s", status: 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
			srv.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
				body, _ := json.Marshal(map[string]string{"message": "rejected " + r.Header.Get("Authorization")})
				w.WriteHeader(tt.status)
				_, _ = w.Write(body)
				return true
			})
			var logs bytes.Buffer
			c := newClient(t, srv, func(cfg *bkapi.Config) {
				cfg.Retries = 2
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			})

			_, err := c.ListScheduledBuilds(context.Background(), "main", 1)
			if err == nil {
				t.Fatal("ListScheduledBuilds() error = nil, want one")
			}
			if !strings.Contains(err.Error(), "rejected Bearer [REDACTED]") {
				t.Errorf("ListScheduledBuilds() error = %q, want the redacted server message", err)
			}
			if strings.Contains(err.Error(), testToken) {
				t.Errorf("ListScheduledBuilds() error = %q contains the token", err)
			}
			if strings.Contains(logs.String(), testToken) {
				t.Errorf("logs contain the token:\n%s", logs.String())
			}
			if tt.status == 500 && !strings.Contains(logs.String(), "retrying") {
				t.Errorf("logs do not mention the retries:\n%s", logs.String())
			}
		})
	}
}
