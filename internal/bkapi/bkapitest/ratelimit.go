package bkapitest

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// Buildkite's REST API limit: 200 requests a minute for an organization.
const (
	DefaultRateLimit  = 200
	DefaultRateWindow = time.Minute
)

// Limited returns how many requests were refused with 429.
func (s *Server) Limited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limited
}

// rateLimit counts an API request in the fixed window and sets the
// headers; it answers 429 and returns false when the window is spent.
func (s *Server) rateLimit(w http.ResponseWriter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	limit, window := s.RateLimit, s.RateWindow
	if limit <= 0 {
		limit = DefaultRateLimit
	}
	if window <= 0 {
		window = DefaultRateWindow
	}
	now := time.Now()
	if s.window.IsZero() || now.Sub(s.window) >= window {
		s.window, s.used = now, 0
	}
	reset := int(math.Ceil(s.window.Add(window).Sub(now).Seconds()))
	h := w.Header()
	h.Set("RateLimit-Limit", strconv.Itoa(limit))
	h.Set("RateLimit-Reset", strconv.Itoa(reset))
	if s.used >= limit {
		s.limited++
		h.Set("RateLimit-Remaining", "0")
		writeJSON(w, http.StatusTooManyRequests, map[string]string{"message": "You have exceeded your rate limit"})
		return false
	}
	s.used++
	h.Set("RateLimit-Remaining", strconv.Itoa(limit-s.used))
	return true
}
