// Package hfhub is a loopback stand-in for the Hugging Face Hub's dataset
// endpoints, as huggingface_hub and datasets call them when HF_ENDPOINT
// points at it: a repository's info, its file tree, paths-info, and file
// downloads (resolve). It serves datasets the test builds, so lm-eval's
// own task code loads them unchanged and nothing reaches the Hub.
//
// Every path it does not know answers 404 with the Hub's error header and
// is counted, so a test sees a client asking for something it lacks.
package hfhub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Repo is one dataset repository: its id ("openai/gsm8k") and files by
// path ("README.md", "main/test.jsonl").
type Repo struct {
	ID    string
	Files map[string][]byte
}

// sha is the repository's one commit: a hash of its content, so a changed
// set is a new revision for datasets' cache.
func (r Repo) sha() string {
	h := sha1.New()
	for _, p := range r.paths() {
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(r.Files[p]))
		h.Write(r.Files[p])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (r Repo) paths() []string {
	out := make([]string, 0, len(r.Files))
	for p := range r.Files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Server serves repos on a loopback port.
type Server struct {
	repos map[string]Repo
	srv   *http.Server
	ln    net.Listener

	mu      sync.Mutex
	unknown []string
	served  map[string]int
}

// Start listens on 127.0.0.1 and serves repos until Close.
func Start(repos ...Repo) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("hub stand-in: %w", err)
	}
	s := &Server{repos: map[string]Repo{}, ln: ln, served: map[string]int{}}
	for _, r := range repos {
		s.repos[r.ID] = r
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// URL is what HF_ENDPOINT is set to.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Unknown are the requests it answered 404 for want of a route or file.
func (s *Server) Unknown() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.unknown...)
}

// Served says how many times a repo file was downloaded, by "repo/path".
func (s *Server) Served() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.served {
		out[k] = v
	}
	return out
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request, why string) {
	s.mu.Lock()
	s.unknown = append(s.unknown, r.Method+" "+r.URL.String())
	s.mu.Unlock()
	w.Header().Set("X-Error-Code", "EntryNotFound")
	w.Header().Set("X-Error-Message", why)
	http.Error(w, `{"error":"`+why+`"}`, http.StatusNotFound)
}

// ServeHTTP routes /api/datasets/{org}/{name}/... and
// /datasets/{org}/{name}/resolve/{rev}/{path}.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.EscapedPath()
	if rest, ok := strings.CutPrefix(p, "/api/datasets/"); ok {
		repo, op, tail, ok := s.split(rest)
		if !ok {
			s.notFound(w, r, "Repository not found")
			return
		}
		switch op {
		case "revision":
			s.info(w, r, repo)
			return
		case "tree":
			s.tree(w, r, repo, tail)
			return
		case "paths-info":
			s.pathsInfo(w, r, repo)
			return
		}
		if op == "" && r.Method == http.MethodGet {
			s.info(w, r, repo)
			return
		}
	}
	if rest, ok := strings.CutPrefix(p, "/datasets/"); ok {
		repo, op, tail, ok := s.split(rest)
		if ok && op == "resolve" {
			s.resolve(w, r, repo, tail)
			return
		}
	}
	s.notFound(w, r, "no such route in the hub stand-in")
}

// split reads "org/name/op/rest" into the repo, op and rest.
func (s *Server) split(rest string) (Repo, string, string, bool) {
	parts := strings.SplitN(rest, "/", 4)
	if len(parts) < 2 {
		return Repo{}, "", "", false
	}
	repo, ok := s.repos[parts[0]+"/"+parts[1]]
	if !ok {
		return Repo{}, "", "", false
	}
	op, tail := "", ""
	if len(parts) > 2 {
		op = parts[2]
	}
	if len(parts) > 3 {
		tail = parts[3]
	}
	return repo, op, tail, true
}

type sibling struct {
	RFilename string `json:"rfilename"`
	Size      int    `json:"size"`
}

func (s *Server) info(w http.ResponseWriter, _ *http.Request, repo Repo) {
	var sibs []sibling
	for _, p := range repo.paths() {
		sibs = append(sibs, sibling{RFilename: p, Size: len(repo.Files[p])})
	}
	writeJSON(w, map[string]any{
		"_id":          "stand-in-" + repo.sha()[:12],
		"id":           repo.ID,
		"author":       strings.Split(repo.ID, "/")[0],
		"sha":          repo.sha(),
		"lastModified": "2026-01-01T00:00:00.000Z",
		"private":      false,
		"gated":        false,
		"disabled":     false,
		"downloads":    0,
		"likes":        0,
		"tags":         []string{},
		"cardData":     map[string]any{},
		"siblings":     sibs,
		"createdAt":    "2026-01-01T00:00:00.000Z",
	})
}

type entry struct {
	Type string `json:"type"`
	OID  string `json:"oid"`
	Size int    `json:"size"`
	Path string `json:"path"`
}

func fileEntry(repo Repo, p string) entry {
	sum := sha1.Sum(append([]byte("blob "+strconv.Itoa(len(repo.Files[p]))+"\x00"), repo.Files[p]...))
	return entry{Type: "file", OID: hex.EncodeToString(sum[:]), Size: len(repo.Files[p]), Path: p}
}

func dirEntry(repo Repo, p string) entry {
	sum := sha1.Sum([]byte("tree " + repo.sha() + p))
	return entry{Type: "directory", OID: hex.EncodeToString(sum[:]), Path: p}
}

// tree lists the files and folders under a path: "rev" or "rev/dir".
func (s *Server) tree(w http.ResponseWriter, r *http.Request, repo Repo, tail string) {
	rev, dir, _ := strings.Cut(tail, "/")
	if _, err := url.PathUnescape(rev); err != nil {
		s.notFound(w, r, "bad revision")
		return
	}
	dir, _ = url.PathUnescape(dir)
	dir = strings.Trim(dir, "/")
	recursive := r.URL.Query().Get("recursive") == "true" || r.URL.Query().Get("recursive") == "1"
	prefix := ""
	if dir != "" {
		prefix = dir + "/"
	}
	seenDirs := map[string]bool{}
	out := []entry{}
	found := dir == ""
	for _, p := range repo.paths() {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok {
			continue
		}
		found = true
		parts := strings.Split(rest, "/")
		for i := 1; i < len(parts); i++ {
			d := prefix + strings.Join(parts[:i], "/")
			if !seenDirs[d] && (recursive || i == 1) {
				seenDirs[d] = true
				out = append(out, dirEntry(repo, d))
			}
		}
		if recursive || len(parts) == 1 {
			out = append(out, fileEntry(repo, p))
		}
	}
	if !found {
		s.notFound(w, r, "no such folder")
		return
	}
	writeJSON(w, out)
}

// pathsInfo answers for the paths of a form or JSON body.
func (s *Server) pathsInfo(w http.ResponseWriter, r *http.Request, repo Repo) {
	var paths []string
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var body struct {
			Paths []string `json:"paths"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		paths = body.Paths
	} else {
		if err := r.ParseForm(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		paths = r.PostForm["paths"]
	}
	out := []entry{}
	for _, p := range paths {
		p = strings.Trim(p, "/")
		if _, ok := repo.Files[p]; ok {
			out = append(out, fileEntry(repo, p))
			continue
		}
		for _, f := range repo.paths() {
			if strings.HasPrefix(f, p+"/") {
				out = append(out, dirEntry(repo, p))
				break
			}
		}
	}
	writeJSON(w, out)
}

// resolve serves a file as the Hub's resolve endpoint does, with the
// commit and ETag headers huggingface_hub checks.
func (s *Server) resolve(w http.ResponseWriter, r *http.Request, repo Repo, tail string) {
	_, p, _ := strings.Cut(tail, "/")
	p, err := url.PathUnescape(p)
	if err != nil {
		s.notFound(w, r, "bad path")
		return
	}
	data, ok := repo.Files[p]
	if !ok {
		s.notFound(w, r, "Entry not found")
		return
	}
	sum := sha256.Sum256(data)
	etag := `"` + hex.EncodeToString(sum[:]) + `"`
	w.Header().Set("X-Repo-Commit", repo.sha())
	w.Header().Set("ETag", etag)
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("Content-Type", "application/octet-stream")
	if r.Method == http.MethodHead {
		return
	}
	s.mu.Lock()
	s.served[repo.ID+"/"+p]++
	s.mu.Unlock()
	w.Write(data)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
