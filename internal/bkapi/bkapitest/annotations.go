package bkapitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

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
