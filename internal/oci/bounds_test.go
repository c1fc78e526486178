package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A registry that keeps sending pages cannot keep the client reading: a
// Link back to a page already read stops it at once, endless new pages
// stop at MaxTagPages, and every client stops at its request budget.
func TestTagsAreBounded(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	host := standIn(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			switch r.URL.Path {
			case "/v2/self/tags/list":
				w.Header().Set("Link", `</v2/self/tags/list>; rel="next"`)
			case "/v2/endless/tags/list":
				w.Header().Set("Link", fmt.Sprintf(`</v2/endless/tags/list?last=t%d>; rel="next"`, requests.Load()))
			default:
				h.ServeHTTP(w, r)
				return
			}
			io.WriteString(w, `{"tags":["`+strings.Repeat("x", 100)+`"]}`)
		})
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tests := []struct {
		repo        string
		max         int
		want        string
		wantIs      error
		maxRequests int64
	}{
		{repo: "self", want: "points back to a page already read", maxRequests: 2},
		{repo: "endless", want: fmt.Sprintf("more than %d pages", MaxTagPages), maxRequests: MaxTagPages + 1},
		{repo: "endless", max: 5, wantIs: ErrRequestBudget, maxRequests: 5},
	}
	for _, tt := range tests {
		requests.Store(0)
		c := &Client{Credentials: anonymous, MaxRequests: tt.max}
		r, _ := ParseRepository(host + "/" + tt.repo)
		_, err := c.Tags(ctx, r)
		switch {
		case err == nil:
			t.Errorf("Tags(%s) = nil error, want one", tt.repo)
		case tt.wantIs != nil && !errors.Is(err, tt.wantIs):
			t.Errorf("Tags(%s) error = %v, want %v", tt.repo, err, tt.wantIs)
		case tt.want != "" && !strings.Contains(err.Error(), tt.want):
			t.Errorf("Tags(%s) error = %v, want %q", tt.repo, err, tt.want)
		}
		if n := requests.Load(); n > tt.maxRequests {
			t.Errorf("Tags(%s, budget %d): the registry answered %d requests, want at most %d", tt.repo, tt.max, n, tt.maxRequests)
		}
		t.Logf("Tags(%s, budget %d): %d requests: %v", tt.repo, tt.max, requests.Load(), err)
	}
}

// Each request is bounded in time: a registry that never answers fails
// the request, not the step.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	host := standIn(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		})
	})
	c := &Client{Credentials: anonymous, Timeout: 200 * time.Millisecond}
	r, _ := ParseRepository(host + "/slow")
	start := time.Now()
	_, err := c.Tags(context.Background(), r)
	if err == nil || time.Since(start) > 5*time.Second {
		t.Errorf("Tags() against a silent registry: %v after %s, want an error within the timeout", err, time.Since(start))
	}
}
