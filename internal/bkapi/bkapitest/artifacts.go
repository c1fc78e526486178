package bkapitest

import (
	"fmt"
	"net/http"
	"path"
	"slices"
	"strconv"
)

// Artifact is an artifact to serve. State defaults to "finished".
type Artifact struct {
	JobID   string
	Path    string
	State   string
	Content []byte
}

type storedArtifact struct {
	Artifact
	ID          string
	BuildNumber int
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
