package bkapi_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/google/go-cmp/cmp"
)

func TestListArtifacts(t *testing.T) {
	t.Parallel()
	srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
	srv.MaxPerPage = 2
	srv.AddBuild(bkapitest.Build{Number: 9})
	srv.AddBuild(bkapitest.Build{Number: 10})
	var wantPaths []string
	for _, p := range []string{"results/a/summary.json", "results/b/summary.json", "logs/a.log", "logs/b.log", "results/c/summary.json"} {
		srv.AddArtifact(9, bkapitest.Artifact{JobID: "job-1", Path: p, Content: []byte("{}")})
		wantPaths = append(wantPaths, p)
	}
	srv.AddArtifact(10, bkapitest.Artifact{JobID: "job-2", Path: "results/a/summary.json", Content: []byte("{}")})
	c := newClient(t, srv, nil)

	got, err := c.ListArtifacts(context.Background(), 9)
	if err != nil {
		t.Fatalf("ListArtifacts(9) error = %v", err)
	}
	var gotPaths []string
	for _, a := range got {
		gotPaths = append(gotPaths, a.Path)
	}
	if diff := cmp.Diff(gotPaths, wantPaths); diff != "" {
		t.Errorf("ListArtifacts(9) paths diff (-got +want)\n%s", diff)
	}
	var pages int
	for _, r := range srv.Requests() {
		if strings.HasSuffix(r.Path, "/builds/9/artifacts") {
			pages++
		}
	}
	if pages != 3 {
		t.Errorf("ListArtifacts(9) read %d pages, want 3", pages)
	}
}

func TestListJobArtifacts(t *testing.T) {
	t.Parallel()
	srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
	srv.AddBuild(bkapitest.Build{Number: 9})
	id := srv.AddArtifact(9, bkapitest.Artifact{JobID: "job-1", Path: "results/a/summary.json", Content: []byte(`{"ok":true}`)})
	srv.AddArtifact(9, bkapitest.Artifact{JobID: "job-2", Path: "results/b/summary.json", Content: []byte("{}")})
	c := newClient(t, srv, nil)

	got, err := c.ListJobArtifacts(context.Background(), 9, "job-1")
	if err != nil {
		t.Fatalf("ListJobArtifacts(9, job-1) error = %v", err)
	}
	want := []bkapi.Artifact{{
		ID:          id,
		JobID:       "job-1",
		Path:        "results/a/summary.json",
		State:       "finished",
		DownloadURL: srv.URL + "v2/organizations/perf-org/pipelines/nightly-perf/builds/9/jobs/job-1/artifacts/" + id + "/download",
		FileSize:    11,
		SHA1:        "022d91f218046ab2e61cac1eb13d6a718f75df2b",
	}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("ListJobArtifacts(9, job-1) diff (-got +want)\n%s", diff)
	}
}

func TestListArtifactsUnknownBuild(t *testing.T) {
	t.Parallel()
	srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
	c := newClient(t, srv, nil)

	_, err := c.ListArtifacts(context.Background(), 404)
	if !errors.Is(err, bkapi.ErrNotFound) {
		t.Errorf("ListArtifacts(404) error = %v, want errors.Is ErrNotFound", err)
	}
}

func TestDownloadArtifact(t *testing.T) {
	t.Parallel()
	srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
	srv.AddBuild(bkapitest.Build{Number: 3})
	content := []byte(`{"recipe":"llama-h200","output_throughput":1234.5}`)
	srv.AddArtifact(3, bkapitest.Artifact{JobID: "job-1", Path: "results/llama-h200/summary.json", Content: content})
	c := newClient(t, srv, nil)
	arts, err := c.ListArtifacts(context.Background(), 3)
	if err != nil || len(arts) != 1 {
		t.Fatalf("ListArtifacts(3) = %v, %v; want one artifact", arts, err)
	}

	got, err := c.DownloadArtifact(context.Background(), arts[0])
	if err != nil {
		t.Fatalf("DownloadArtifact() error = %v", err)
	}
	if !bytes.Equal(got, content) {
		t.Errorf("DownloadArtifact() = %q, want %q", got, content)
	}

	// Both hosts are 127.0.0.1, where net/http itself would forward the
	// header to the other port; only the client's own check keeps it home.
	type hop struct {
		Storage bool
		Authed  bool
	}
	var hops []hop
	for _, r := range srv.Requests() {
		if strings.Contains(r.Path, "/download") || r.Storage {
			hops = append(hops, hop{Storage: r.Storage, Authed: r.Authorization != ""})
		}
	}
	want := []hop{{Storage: false, Authed: true}, {Storage: true, Authed: false}}
	if diff := cmp.Diff(hops, want); diff != "" {
		t.Errorf("download hops diff (-got +want)\n%s", diff)
	}
}

func TestDownloadArtifactErrors(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte("x"), bkapi.MaxArtifactSize+1)
	tests := []struct {
		name         string
		artifact     func(srv *bkapitest.Server, a bkapi.Artifact) bkapi.Artifact
		intercept    func(w http.ResponseWriter, r *http.Request) bool
		wantIs       error
		wantMsg      string
		wantRequests int
	}{
		{
			name: "listed size over the cap is refused unread",
			artifact: func(_ *bkapitest.Server, a bkapi.Artifact) bkapi.Artifact {
				a.FileSize = bkapi.MaxArtifactSize + 1
				return a
			},
			wantIs:       bkapi.ErrArtifactTooLarge,
			wantRequests: 0,
		},
		{
			name: "body over the cap is cut off",
			intercept: func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.HasPrefix(r.URL.Path, "/artifacts/") {
					return false
				}
				_, _ = w.Write(big)
				return true
			},
			wantIs:       bkapi.ErrArtifactTooLarge,
			wantRequests: 2,
		},
		{
			name: "expired artifact is not found",
			intercept: func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.HasSuffix(r.URL.Path, "/download") {
					return false
				}
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"message":"No artifact found"}`))
				return true
			},
			wantIs:       bkapi.ErrNotFound,
			wantRequests: 1,
		},
		{
			name: "storage refusal is not found, without the signature",
			intercept: func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.HasPrefix(r.URL.Path, "/artifacts/") {
					return false
				}
				w.WriteHeader(http.StatusForbidden)
				_, _ = w.Write([]byte(`<Error><Code>AccessDenied</Code></Error>`))
				return true
			},
			wantIs:       bkapi.ErrNotFound,
			wantMsg:      "artifact may have expired",
			wantRequests: 2,
		},
		{
			name: "contents not matching the listed sha1 are refused",
			artifact: func(_ *bkapitest.Server, a bkapi.Artifact) bkapi.Artifact {
				a.SHA1 = strings.Repeat("0", 40)
				return a
			},
			wantMsg:      "want 0000000000000000000000000000000000000000",
			wantRequests: 2,
		},
		{
			name: "storage 5xx is retried",
			intercept: func() func(http.ResponseWriter, *http.Request) bool {
				var failed bool
				return func(w http.ResponseWriter, r *http.Request) bool {
					if failed || !strings.HasPrefix(r.URL.Path, "/artifacts/") {
						return false
					}
					failed = true
					w.WriteHeader(http.StatusInternalServerError)
					return true
				}
			}(),
			wantRequests: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
			srv.AddBuild(bkapitest.Build{Number: 3})
			srv.AddArtifact(3, bkapitest.Artifact{JobID: "job-1", Path: "results/r/summary.json", Content: []byte("{}")})
			c := newClient(t, srv, func(cfg *bkapi.Config) { cfg.Retries = 1 })
			arts, err := c.ListArtifacts(context.Background(), 3)
			if err != nil || len(arts) != 1 {
				t.Fatalf("ListArtifacts(3) = %v, %v; want one artifact", arts, err)
			}
			a := arts[0]
			if tt.artifact != nil {
				a = tt.artifact(srv, a)
			}
			srv.Intercept(tt.intercept)
			before := len(srv.Requests())

			_, err = c.DownloadArtifact(context.Background(), a)
			if tt.wantIs == nil && tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("DownloadArtifact() error = %v", err)
				}
			} else if err == nil {
				t.Fatal("DownloadArtifact() error = nil, want one")
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("DownloadArtifact() error = %v, want errors.Is %v", err, tt.wantIs)
			}
			if tt.wantMsg != "" && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("DownloadArtifact() error = %q, want it to contain %q", err, tt.wantMsg)
			}
			if err != nil && strings.Contains(err.Error(), "X-Amz-Signature") {
				t.Errorf("DownloadArtifact() error = %q shows the storage signature", err)
			}
			if n := len(srv.Requests()) - before; n != tt.wantRequests {
				t.Errorf("server got %d requests, want %d", n, tt.wantRequests)
			}
		})
	}
}

// A samples file of realistic size (tens of megabytes, over the in-memory
// cap) streams to disk whole, checked against its sha1.
//
// Not parallel: tens of megabytes under -race would slow the timed
// downloads of the other tests.
func TestDownloadArtifactFile(t *testing.T) {
	srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
	srv.AddBuild(bkapitest.Build{Number: 3})
	content := bytes.Repeat([]byte(`{"doc_id": 1, "doc_hash": "ab", "filter": "strict-match"}`+"\n"), bkapi.MaxArtifactSize/58+20)
	srv.AddArtifact(3, bkapitest.Artifact{JobID: "job-1", Path: "results/r/gsm8k/m/samples_gsm8k_2026-01-01T00-00-00.jsonl", Content: content})
	c := newClient(t, srv, nil)
	arts, err := c.ListArtifacts(context.Background(), 3)
	if err != nil || len(arts) != 1 {
		t.Fatalf("ListArtifacts(3) = %v, %v; want one artifact", arts, err)
	}
	if _, err := c.DownloadArtifact(context.Background(), arts[0]); !errors.Is(err, bkapi.ErrArtifactTooLarge) {
		t.Fatalf("DownloadArtifact() of %d bytes = %v, want ErrArtifactTooLarge (the in-memory cap)", len(content), err)
	}
	dir := t.TempDir()
	path, err := c.DownloadArtifactFile(context.Background(), arts[0], dir)
	if err != nil {
		t.Fatalf("DownloadArtifactFile() error = %v", err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, content) {
		t.Errorf("DownloadArtifactFile() wrote %d bytes, want %d", len(got), len(content))
	}
	bad := arts[0]
	bad.SHA1 = strings.Repeat("0", 40)
	if _, err := c.DownloadArtifactFile(context.Background(), bad, dir); err == nil || !strings.Contains(err.Error(), "sha1") {
		t.Errorf("DownloadArtifactFile() with a wrong sha1 = %v, want an error", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("%d files left in the download folder, want only the good one", len(left))
	}
}
