package bkapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi"
)

// A 429 whose reset is longer than the retry backoff's cap is waited out
// as the API asks, once, instead of retried early into more 429s until
// the retries are spent (which lost every night of a history fetch).
// Requests made meanwhile wait too; a wait past the caller's deadline
// gives up at once, saying so.
func TestRateLimitWaitsTheReset(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var limitedUntil atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if now := time.Now().UnixNano(); limitedUntil.Load() == 0 || now < limitedUntil.Load() {
			if limitedUntil.Load() == 0 {
				limitedUntil.Store(time.Now().Add(time.Second).UnixNano())
			}
			w.Header().Set("RateLimit-Reset", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"message":"You have exceeded your API rate limit"}`)
			return
		}
		fmt.Fprint(w, `{"number": 7, "state": "passed"}`)
	}))
	t.Cleanup(srv.Close)
	c, err := bkapi.New(bkapi.Config{BaseURL: srv.URL, Token: "tok", Org: "o", Pipeline: "p", Timeout: 5 * time.Second,
		RetryDelay: 10 * time.Millisecond, MaxRetryDelay: 50 * time.Millisecond, Retries: 2})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	b, err := c.GetBuild(context.Background(), 7)
	if err != nil || b.Number != 7 {
		t.Fatalf("GetBuild() = %+v, %v after %d requests; want build 7 after the reset", b, err, calls.Load())
	}
	if took := time.Since(start); took < 900*time.Millisecond || calls.Load() != 2 {
		t.Errorf("GetBuild() took %s and %d requests, want the reset (1 s) waited once: 2 requests", took, calls.Load())
	}

	limitedUntil.Store(0)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start = time.Now()
	_, err = c.GetBuild(ctx, 7)
	if err == nil || !strings.Contains(err.Error(), "past this step's deadline") || time.Since(start) > 250*time.Millisecond {
		t.Errorf("GetBuild() with a deadline before the reset = %v after %s, want an error at once", err, time.Since(start))
	}
}
