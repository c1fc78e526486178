package agentapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"unicode/utf8"
)

// Limits Buildkite documents for annotations.
const (
	maxAnnotationBody    = 1024 * 1024
	maxAnnotationContext = 100
)

// annotationIn is the agent's api.Annotation.
type annotationIn struct {
	Body     string `json:"body"`
	Context  string `json:"context"`
	Style    string `json:"style"`
	Append   bool   `json:"append"`
	Priority int    `json:"priority"`
	Scope    string `json:"scope"`
}

func (s *Server) annotate(w http.ResponseWriter, r *http.Request) {
	var a annotationIn
	if err := decode(r, &a); err != nil {
		s.reply(w, r, 0, nil, err)
		return
	}
	var err error
	switch {
	case len(a.Body) > maxAnnotationBody:
		err = fail(http.StatusUnprocessableEntity, "body is %d bytes, more than %d", len(a.Body), maxAnnotationBody)
	case !utf8.ValidString(a.Body):
		err = fail(http.StatusUnprocessableEntity, "body is not UTF-8")
	case len(a.Context) > maxAnnotationContext:
		err = fail(http.StatusUnprocessableEntity, "context is longer than %d characters", maxAnnotationContext)
	case a.Style != "" && !slices.Contains([]string{"success", "info", "warning", "error"}, a.Style):
		err = fail(http.StatusUnprocessableEntity, "style %q is not success, info, warning or error", a.Style)
	case a.Priority != 0 && (a.Priority < 1 || a.Priority > 10):
		err = fail(http.StatusUnprocessableEntity, "priority %d is not 1 to 10", a.Priority)
	case a.Scope != "" && a.Scope != "build" && a.Scope != "job":
		err = fail(http.StatusUnprocessableEntity, "scope %q is not build or job", a.Scope)
	}
	if err != nil {
		s.reply(w, r, 0, nil, err)
		return
	}
	ctx := a.Context
	if ctx == "" {
		ctx = "default"
	}
	s.mu.Lock()
	cur, ok := s.annotations[ctx]
	if !ok {
		cur = &Annotation{Context: ctx, Style: "default", Priority: 3, Scope: "build"}
		s.annotations[ctx] = cur
	}
	if a.Append {
		cur.Body += a.Body
	} else {
		cur.Body = a.Body
	}
	if a.Style != "" {
		cur.Style = a.Style
	}
	if a.Priority != 0 {
		cur.Priority = a.Priority
	}
	if a.Scope != "" {
		cur.Scope = a.Scope
	}
	s.mu.Unlock()
	s.reply(w, r, http.StatusCreated, map[string]string{"id": newUUID()}, nil)
}

// pipelineIn is the agent's api.PipelineChange.
type pipelineIn struct {
	UUID     string          `json:"uuid"`
	Pipeline json.RawMessage `json:"pipeline"`
	Replace  bool            `json:"replace"`
}

// uploadPipeline takes an asynchronous upload (the agent always asks for
// one) and answers 202 with where to poll.
func (s *Server) uploadPipeline(w http.ResponseWriter, r *http.Request) {
	if q := r.URL.Query(); len(q) != 1 || q.Get("async") != "true" {
		s.reply(w, r, 0, nil, fail(http.StatusBadRequest, "query %q, want async=true", r.URL.RawQuery))
		return
	}
	var p pipelineIn
	if err := decode(r, &p); err != nil {
		s.reply(w, r, 0, nil, err)
		return
	}
	if !uuidPattern.MatchString(p.UUID) {
		s.reply(w, r, 0, nil, fail(http.StatusUnprocessableEntity, "uuid %q is not a UUID", p.UUID))
		return
	}
	var shape struct {
		Steps []json.RawMessage `json:"steps"`
	}
	dec := json.NewDecoder(bytes.NewReader(p.Pipeline))
	if err := dec.Decode(&shape); err != nil || len(shape.Steps) == 0 {
		s.reply(w, r, 0, nil, fail(http.StatusUnprocessableEntity, "the pipeline is not an object with a list of steps"))
		return
	}
	s.mu.Lock()
	known := slices.ContainsFunc(s.pipelines, func(q Pipeline) bool { return q.UUID == p.UUID })
	if !known {
		s.pipelines = append(s.pipelines, Pipeline{UUID: p.UUID, Replace: p.Replace, Pipeline: p.Pipeline})
	}
	s.mu.Unlock()
	// A retried upload (same UUID) is the same upload, not a second one.
	w.Header().Set("Location", s.Endpoint()+"/jobs/"+s.cfg.JobID+"/pipelines/"+p.UUID)
	w.Header().Set("Retry-After", "0")
	s.reply(w, r, http.StatusAccepted, map[string]string{"state": "pending"}, nil)
}

func (s *Server) pipelineStatus(w http.ResponseWriter, r *http.Request, uuid string) {
	s.mu.Lock()
	known := slices.ContainsFunc(s.pipelines, func(q Pipeline) bool { return q.UUID == uuid })
	s.mu.Unlock()
	if !known {
		s.reply(w, r, 0, nil, fail(http.StatusNotFound, "no pipeline upload %s", uuid))
		return
	}
	s.reply(w, r, http.StatusOK, map[string]string{"state": "applied", "message": ""}, nil)
}

// secret answers GET jobs/<job>/secrets?key=K.
func (s *Server) secret(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	key := q.Get("key")
	if len(q) != 1 || key == "" {
		s.reply(w, r, 0, nil, fail(http.StatusBadRequest, "query %q, want key=NAME", r.URL.RawQuery))
		return
	}
	v, ok := s.cfg.Secrets[key]
	if !ok {
		s.reply(w, r, 0, nil, fail(http.StatusNotFound, "secret %q not found", key))
		return
	}
	s.reply(w, r, http.StatusOK, map[string]string{"key": key, "value": v, "uuid": newUUID()}, nil)
}
