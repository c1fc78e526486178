// Package bisecttest is a loopback image registry of vLLM nightly images
// for bisect tests: go-containerregistry's in-process registry, and images
// whose creation times order the commits as a nightly pipeline pushed them.
package bisecttest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/oci/ocitest"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

// Registry starts a registry on loopback for the test's life and returns
// the repository path on it (host:port/path).
func Registry(t testing.TB, path string) string {
	t.Helper()
	return ocitest.NewRegistry(t, nil).Host + "/" + path
}

// Push writes a small random image created at created to repo:tag.
func Push(t testing.TB, repo, tag string, created time.Time) {
	t.Helper()
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.CreatedAt(img, v1.Time{Time: created}); err != nil {
		t.Fatal(err)
	}
	ocitest.Push(t, repo+":"+tag, img)
}

// Nightlies pushes a nightly-<commit> image of each commit, in order, the
// i-th created i hours after t0, as the nightly images were built.
func Nightlies(t testing.TB, repo string, t0 time.Time, commits []string) {
	t.Helper()
	for i, c := range commits {
		Push(t, repo, "nightly-"+c, t0.Add(time.Duration(i)*time.Hour))
	}
}

// Hub is a stand-in for Docker Hub's web API tag list of one repository
// (GET /v2/namespaces/<ns>/repositories/<name>/tags): pages of at most
// 100 tags, newest push first for ordering=last_updated, each with the
// absolute address of the next. It counts the requests it answers.
type Hub struct {
	URL      string
	mu       sync.Mutex
	requests int
}

// Requests is how many requests the stand-in answered.
func (h *Hub) Requests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests
}

// NewHub serves repo's nightly-<commit> tags, the i-th pushed i hours
// after t0.
func NewHub(t testing.TB, repo string, t0 time.Time, commits []string) *Hub {
	t.Helper()
	h := &Hub{}
	path := "/v2/namespaces/" + strings.Replace(repo, "/", "/repositories/", 1) + "/tags"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.requests++
		h.mu.Unlock()
		q := r.URL.Query()
		size, err := strconv.Atoi(q.Get("page_size"))
		if q.Get("page_size") == "" {
			size, err = 10, nil
		}
		page, perr := strconv.Atoi(q.Get("page"))
		if q.Get("page") == "" {
			page, perr = 1, nil
		}
		if r.URL.Path != path || err != nil || perr != nil || size < 1 || size > 100 || page < 1 || q.Get("ordering") != "last_updated" {
			http.Error(w, `{"message":"bad request"}`, http.StatusBadRequest)
			return
		}
		type tag struct {
			Name          string    `json:"name"`
			LastUpdated   time.Time `json:"last_updated"`
			TagLastPushed time.Time `json:"tag_last_pushed"`
		}
		var results []tag
		for i := len(commits) - 1 - (page-1)*size; i >= 0 && len(results) < size; i-- {
			at := t0.Add(time.Duration(i) * time.Hour)
			results = append(results, tag{Name: "nightly-" + commits[i], LastUpdated: at, TagLastPushed: at})
		}
		var next *string
		if page*size < len(commits) {
			n := "http://" + r.Host + path + "?" + url.Values{"ordering": {"last_updated"}, "page": {strconv.Itoa(page + 1)}, "page_size": {strconv.Itoa(size)}}.Encode()
			next = &n
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"count": len(commits), "next": next, "previous": nil, "results": results})
	}))
	t.Cleanup(srv.Close)
	h.URL = srv.URL
	return h
}
