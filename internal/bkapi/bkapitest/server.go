// Package bkapitest serves an in-memory Buildkite REST API for one
// pipeline on loopback, for tests of code built on bkapi. It speaks the
// real API's JSON shapes, bearer-token authentication, error bodies,
// Link-header pagination and artifact downloads that redirect to a
// separate storage host, which, like S3 with a presigned URL, refuses a
// request that also carries an Authorization header.
package bkapitest

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The real API's page sizes.
const (
	defaultPerPage = 30
	maxPerPage     = 100
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

// Build is a build to serve. Zero fields get defaults: State "passed",
// Source "schedule", Branch the default branch, Commit a fixed SHA.
type Build struct {
	Number     int
	State      string
	Source     string
	Branch     string
	Commit     string
	Message    string
	Env        map[string]string
	CreatedAt  time.Time
	FinishedAt time.Time // zero: still running, served as null
	Jobs       []Job
}

// Job is a job of a Build. Zero fields get defaults: a generated ID, Type
// "script", State "passed".
type Job struct {
	ID      string
	Type    string // script, waiter, manual or trigger
	StepKey string
	Label   string
	State   string
	// SoftFailed and ExitStatus, when set, are reported as given;
	// ExitStatus defaults to 0 for a passed job and 1 otherwise.
	SoftFailed bool
	ExitStatus *int
	// Retried is a try that was retried in RetriedInJobID (a later job of
	// the same step); the API lists it only with include_retried_jobs.
	Retried        bool
	RetriedInJobID string
	// Signal and SignalReason are what the agent reported when it
	// signalled the job or did not run it (agent_stop, cancel, ...).
	Signal, SignalReason string
	// StartedAt and FinishedAt default to the build's.
	StartedAt, FinishedAt time.Time
}

// Artifact is an artifact to serve. State defaults to "finished".
type Artifact struct {
	JobID   string
	Path    string
	State   string
	Content []byte
}

// Request is a request either server received.
type Request struct {
	Method        string
	Path          string
	Query         string
	Authorization string // as sent; empty when absent
	Storage       bool   // received by the storage host
}

// Annotation is an annotation created through the REST API.
type Annotation struct {
	Build   int    `json:"-"`
	Context string `json:"context"`
	Style   string `json:"style"`
	Body    string `json:"body"`
	Append  bool   `json:"append"`
}

// Annotations returns the annotations created so far, in order.
func (s *Server) Annotations() []Annotation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Annotation(nil), s.notes...)
}

// annotate is POST .../builds/{number}/annotations: a body is required,
// the style is one of Buildkite's four, and the build must exist.
func (s *Server) annotate(w http.ResponseWriter, r *http.Request) {
	var a Annotation
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Problems parsing JSON"})
		return
	}
	switch {
	case a.Body == "":
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed: body can't be blank"})
		return
	case a.Style != "" && a.Style != "success" && a.Style != "info" && a.Style != "warning" && a.Style != "error":
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed: style is not included in the list"})
		return
	}
	n, err := strconv.Atoi(r.PathValue("number"))
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for _, b := range s.builds {
		found = found || err == nil && b.Number == n
	}
	if !found {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	a.Build = n
	s.notes = append(s.notes, a)
	writeJSON(w, http.StatusCreated, map[string]any{"id": fmt.Sprintf("annotation-%d", len(s.notes)), "context": a.Context, "style": a.Style, "body_html": a.Body})
}

// CreatedBuild is the body of a create-build request as received.
type CreatedBuild struct {
	Commit   string            `json:"commit"`
	Branch   string            `json:"branch"`
	Message  string            `json:"message"`
	Env      map[string]string `json:"env"`
	MetaData map[string]string `json:"meta_data"`
	// Raw holds every key of the body.
	Raw map[string]any `json:"-"`
}

type storedArtifact struct {
	Artifact
	ID          string
	BuildNumber int
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

// AddBuild adds b; the API lists builds newest (highest number) first.
func (s *Server) AddBuild(b Build) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.builds = append(s.builds, b)
}

// AddArtifact adds an artifact of a build and returns its ID.
func (s *Server) AddArtifact(buildNumber int, a Artifact) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.State == "" {
		a.State = "finished"
	}
	id := fmt.Sprintf("0191727d-b5ce-4576-b37d-%012x", len(s.artifacts)+1)
	s.artifacts = append(s.artifacts, storedArtifact{Artifact: a, ID: id, BuildNumber: buildNumber})
	return id
}

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

// Requests returns the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Created returns the bodies of the create-build requests accepted so far.
func (s *Server) Created() []CreatedBuild {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.created)
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

func (s *Server) listBuilds(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	branches, states := q["branch[]"], q["state[]"]
	s.mu.Lock()
	var matched []Build
	for _, b := range s.builds {
		b = s.withDefaults(b)
		if (len(branches) == 0 || slices.Contains(branches, b.Branch)) && (len(states) == 0 || slices.Contains(states, b.State)) {
			matched = append(matched, b)
		}
	}
	s.mu.Unlock()
	slices.SortStableFunc(matched, func(a, b Build) int { return b.Number - a.Number })

	page, ok := s.paginate(w, r, len(matched))
	if !ok {
		return
	}
	out := make([]buildJSON, 0, page.end-page.start)
	for _, b := range matched[page.start:page.end] {
		out = append(out, s.buildJSON(b, q.Get("include_retried_jobs") == "true"))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getBuild(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("number"))
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.builds {
		if b.Number == n {
			writeJSON(w, http.StatusOK, s.buildJSON(s.withDefaults(b), r.URL.Query().Get("include_retried_jobs") == "true"))
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}

func (s *Server) createBuild(w http.ResponseWriter, r *http.Request) {
	var raw map[string]any
	var body CreatedBuild
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	if err := dec.Decode(&raw); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Problems parsing JSON"})
		return
	}
	// Round-trip through JSON to fill the typed fields from raw.
	b, _ := json.Marshal(raw)
	if err := json.Unmarshal(b, &body); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed: " + err.Error()})
		return
	}
	body.Raw = raw
	if body.Commit == "" || body.Branch == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{
			"message": "Validation Failed",
			"errors":  []map[string]string{{"field": "commit", "code": "missing"}, {"field": "branch", "code": "missing"}},
		})
		return
	}

	s.mu.Lock()
	number := 1
	for _, b := range s.builds {
		number = max(number, b.Number+1)
	}
	build := Build{
		Number:    number,
		State:     "scheduled",
		Source:    "api",
		Branch:    body.Branch,
		Commit:    body.Commit,
		Message:   body.Message,
		Env:       body.Env,
		CreatedAt: time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC),
	}
	s.builds = append(s.builds, build)
	s.created = append(s.created, body)
	out := s.buildJSON(s.withDefaults(build), false)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, out)
}

func (s *Server) listArtifacts(w http.ResponseWriter, r *http.Request) {
	number, err := strconv.Atoi(r.PathValue("number"))
	jobID := r.PathValue("job")
	s.mu.Lock()
	found := err == nil && slices.ContainsFunc(s.builds, func(b Build) bool { return b.Number == number })
	var matched []storedArtifact
	for _, a := range s.artifacts {
		if a.BuildNumber == number && (jobID == "" || a.JobID == jobID) {
			matched = append(matched, a)
		}
	}
	s.mu.Unlock()
	if !found {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "No build found"})
		return
	}
	page, ok := s.paginate(w, r, len(matched))
	if !ok {
		return
	}
	out := make([]artifactJSON, 0, page.end-page.start)
	for _, a := range matched[page.start:page.end] {
		out = append(out, s.artifactJSON(a))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) download(w http.ResponseWriter, r *http.Request) {
	a, ok := s.artifact(r.PathValue("id"))
	if !ok || a.JobID != r.PathValue("job") || strconv.Itoa(a.BuildNumber) != r.PathValue("number") {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "No artifact found"})
		return
	}
	// Like a presigned S3 URL: the signature lives in the query.
	target := s.StorageURL + "artifacts/" + a.ID + "/" + path.Base(a.Path) +
		"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=600&X-Amz-Signature=0f1e2d3c4b5a69788796a5b4c3d2e1f0"
	w.Header().Set("Location", target)
	writeJSON(w, http.StatusFound, map[string]string{"url": target})
}

func (s *Server) serveStorage(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "" {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified</Message></Error>`)
		return
	}
	var id string
	if dir, _ := path.Split(r.URL.Path); len(dir) > len("/artifacts/") {
		id = path.Base(dir)
	}
	a, ok := s.artifact(id)
	if !ok || r.URL.Query().Get("X-Amz-Signature") == "" {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.Itoa(len(a.Content)))
	_, _ = w.Write(a.Content)
}

func (s *Server) artifact(id string) (storedArtifact, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.artifacts {
		if a.ID == id {
			return a, true
		}
	}
	return storedArtifact{}, false
}

type pageRange struct{ start, end int }

// countParam is the query parameter name, a whole number from 1 up, or
// def when it is absent; one that is not answers 400 as the API does.
func countParam(w http.ResponseWriter, q url.Values, name string, def int) (int, bool) {
	v := q.Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		writeJSON(w, http.StatusBadRequest, map[string]string{"message": "Invalid " + name})
		return 0, false
	}
	return n, true
}

// paginate picks the page the request asks for and sets the Link header
// the way the real API does: next and last while there are more pages,
// first and prev after the first.
func (s *Server) paginate(w http.ResponseWriter, r *http.Request, total int) (pageRange, bool) {
	q := r.URL.Query()
	page, ok := countParam(w, q, "page", 1)
	if !ok {
		return pageRange{}, false
	}
	perPage, ok := countParam(w, q, "per_page", defaultPerPage)
	if !ok {
		return pageRange{}, false
	}
	perPage = min(perPage, maxPerPage)
	if s.MaxPerPage > 0 {
		perPage = min(perPage, s.MaxPerPage)
	}
	last := max(1, (total+perPage-1)/perPage)
	link := func(p int, rel string) string {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(p))
		q.Set("per_page", strconv.Itoa(perPage))
		u := url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawQuery: q.Encode()}
		return fmt.Sprintf("<%s>; rel=%q", u.String(), rel)
	}
	var links []string
	if page < last {
		links = append(links, link(page+1, "next"), link(last, "last"))
	}
	if page > 1 {
		links = append(links, link(1, "first"), link(min(page-1, last), "prev"))
	}
	if len(links) > 0 {
		w.Header().Set("Link", joinLinks(links))
	}
	start := min((page-1)*perPage, total)
	return pageRange{start: start, end: min(start+perPage, total)}, true
}

func joinLinks(links []string) string {
	out := links[0]
	for _, l := range links[1:] {
		out += ", " + l
	}
	return out
}

func (s *Server) withDefaults(b Build) Build {
	if b.State == "" {
		b.State = "passed"
	}
	if b.Source == "" {
		b.Source = "schedule"
	}
	if b.Branch == "" {
		b.Branch = s.DefaultBranch
	}
	if b.Commit == "" {
		b.Commit = "4f1c0a3c9e1d2b3a4f5e6d7c8b9a0f1e2d3c4b5a"
	}
	if b.Message == "" {
		b.Message = "Nightly"
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC).Add(time.Duration(b.Number) * 24 * time.Hour)
	}
	return b
}

func (s *Server) apiURL(format string, args ...any) string {
	return s.URL + fmt.Sprintf(format, args...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func timestamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000Z")
	return &s
}

func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}
