package bkapitest

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"
)

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

// AddBuild adds b; the API lists builds newest (highest number) first.
func (s *Server) AddBuild(b Build) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.builds = append(s.builds, b)
}

// Created returns the bodies of the create-build requests accepted so far.
func (s *Server) Created() []CreatedBuild {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.created)
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
