// Package bkapitest serves an in-memory Buildkite REST API for one
// pipeline on loopback, for tests of code built on bkapi. It speaks the
// real API's JSON shapes, bearer-token authentication, error bodies,
// Link-header pagination and artifact downloads that redirect to a
// separate storage host, which, like S3 with a presigned URL, refuses a
// request that also carries an Authorization header.
package bkapitest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// Server is a fake Buildkite REST API holding the builds and artifacts of
// one pipeline. Configure it before the code under test runs.
type Server struct {
	URL           string // API root with a trailing slash, for bkapi.Config.BaseURL
	StorageURL    string // root of the artifact storage host
	Org           string
	Pipeline      string
	Token         string
	DefaultBranch string
	// MaxPerPage caps the page size below the real API's 100, so that
	// pagination shows with a few builds.
	MaxPerPage int
	// RateLimit is how many API requests a window allows, as Buildkite's
	// REST API counts them (DefaultRateLimit); RateWindow its length
	// (DefaultRateWindow). Every API answer carries RateLimit-Limit,
	// RateLimit-Remaining and RateLimit-Reset (seconds to the next
	// window); a request over the limit gets 429. Storage downloads are
	// not counted.
	RateLimit  int
	RateWindow time.Duration

	api     *httptest.Server
	storage *httptest.Server

	mu        sync.Mutex
	builds    []Build
	artifacts []storedArtifact
	requests  []Request
	limited   int       // requests refused with 429
	window    time.Time // start of the current rate window
	used      int       // API requests counted in it
	created   []CreatedBuild
	notes     []Annotation
	intercept func(http.ResponseWriter, *http.Request) bool
}

// Request is a request either server received.
type Request struct {
	Method        string
	Path          string
	Query         string
	Authorization string // as sent; empty when absent
	Storage       bool   // received by the storage host
}

// NewServer starts the API and storage servers for org/pipeline, which
// accept only token, and stops them when the test ends.
func NewServer(t testing.TB, org, pipeline, token string) *Server {
	t.Helper()
	s := &Server{Org: org, Pipeline: pipeline, Token: token, DefaultBranch: "main"}

	mux := http.NewServeMux()
	prefix := "/v2/organizations/{org}/pipelines/{pipeline}"
	handle := func(pattern string, h http.HandlerFunc) { mux.HandleFunc(pattern, s.checkPipeline(h)) }
	handle("GET "+prefix, s.getPipeline)
	handle("GET "+prefix+"/builds", s.listBuilds)
	handle("POST "+prefix+"/builds", s.createBuild)
	handle("GET "+prefix+"/builds/{number}", s.getBuild)
	handle("GET "+prefix+"/builds/{number}/artifacts", s.listArtifacts)
	handle("POST "+prefix+"/builds/{number}/annotations", s.annotate)
	handle("GET "+prefix+"/builds/{number}/jobs/{job}/artifacts", s.listArtifacts)
	handle("GET "+prefix+"/builds/{number}/jobs/{job}/artifacts/{id}/download", s.download)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
	})
	s.api = httptest.NewServer(s.record(false, s.authenticate(mux)))
	s.storage = httptest.NewServer(s.record(true, http.HandlerFunc(s.serveStorage)))
	t.Cleanup(s.api.Close)
	t.Cleanup(s.storage.Close)
	s.URL = s.api.URL + "/"
	s.StorageURL = s.storage.URL + "/"
	return s
}

// Intercept installs f to see every request first, on both hosts; when f
// returns true it has answered the request. Use it to inject faults.
func (s *Server) Intercept(f func(w http.ResponseWriter, r *http.Request) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.intercept = f
}

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

func (s *Server) record(storage bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests = append(s.requests, Request{
			Method:        r.Method,
			Path:          r.URL.Path,
			Query:         r.URL.RawQuery,
			Authorization: r.Header.Get("Authorization"),
			Storage:       storage,
		})
		intercept := s.intercept
		s.mu.Unlock()
		if intercept != nil && intercept(w, r) {
			return
		}
		if !storage && !s.rateLimit(w) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+s.Token {
			writeJSON(w, http.StatusUnauthorized, map[string]string{
				"message": "Authentication required. Please supply a valid API Access Token: https://buildkite.com/docs/apis/rest-api#authentication",
			})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkPipeline answers 404 for another organization or pipeline.
func (s *Server) checkPipeline(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("org") != s.Org {
			writeJSON(w, http.StatusNotFound, map[string]string{"message": "No organization found"})
			return
		}
		if r.PathValue("pipeline") != s.Pipeline {
			writeJSON(w, http.StatusNotFound, map[string]string{"message": "No pipeline found"})
			return
		}
		next(w, r)
	}
}

func (s *Server) getPipeline(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"id":             "01908131-7d9f-495e-a17b-80ed31276810",
		"url":            s.apiURL("v2/organizations/%s/pipelines/%s", s.Org, s.Pipeline),
		"web_url":        fmt.Sprintf("https://buildkite.com/%s/%s", s.Org, s.Pipeline),
		"name":           s.Pipeline,
		"slug":           s.Pipeline,
		"repository":     "git@github.com:example/benchmarks.git",
		"default_branch": s.DefaultBranch,
		"provider": map[string]any{
			"id":          "github",
			"webhook_url": "https://webhook.buildkite.com/deliver/0a1b2c3d4e5f",
			"settings": map[string]any{
				"trigger_mode":        "code",
				"build_pull_requests": true,
				"build_branches":      true,
				"repository":          "example/benchmarks",
			},
		},
		"builds_url": s.apiURL("v2/organizations/%s/pipelines/%s/builds", s.Org, s.Pipeline),
		"created_at": timestamp(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)),
	})
}

func (s *Server) apiURL(format string, args ...any) string {
	return s.URL + fmt.Sprintf(format, args...)
}
