package bkapi

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
)

const (
	// MaxArtifactSize caps DownloadArtifact: the runner reads summaries,
	// not model weights.
	MaxArtifactSize = 10 << 20

	// MaxStreamedArtifact caps DownloadArtifactFile, which streams to
	// disk: lm_eval's samples of a long-generation task run to hundreds
	// of megabytes.
	MaxStreamedArtifact = 2 << 30

	// A job holds at most 5000 artifacts, 50 pages of 100; a build may
	// hold several jobs' worth.
	maxArtifactPages = 100
)

// ArtifactFinished is the state of an artifact whose upload completed.
const ArtifactFinished = "finished"

// Artifact is the part of a Buildkite artifact the runner uses.
type Artifact struct {
	ID          string
	JobID       string
	Path        string // as uploaded, relative to the job's working directory
	State       string // new, error, finished, deleted or expired
	DownloadURL string
	FileSize    int64
	SHA1        string
}

// ListArtifacts returns all artifacts of a build, across its jobs.
func (c *Client) ListArtifacts(ctx context.Context, buildNumber int) ([]Artifact, error) {
	what := fmt.Sprintf("list artifacts of %s/%s build %d", c.cfg.Org, c.cfg.Pipeline, buildNumber)
	return c.listArtifacts(ctx, what, func(api *rest) string {
		return api.pipelinePath("builds", strconv.Itoa(buildNumber), "artifacts")
	})
}

// ListJobArtifacts returns the artifacts one job of a build uploaded.
func (c *Client) ListJobArtifacts(ctx context.Context, buildNumber int, jobID string) ([]Artifact, error) {
	what := fmt.Sprintf("list artifacts of %s/%s build %d job %s", c.cfg.Org, c.cfg.Pipeline, buildNumber, jobID)
	return c.listArtifacts(ctx, what, func(api *rest) string {
		return api.pipelinePath("builds", strconv.Itoa(buildNumber), "jobs", jobID, "artifacts")
	})
}

func (c *Client) listArtifacts(ctx context.Context, what string, path func(*rest) string) ([]Artifact, error) {
	var out []Artifact
	for page := 1; page <= maxArtifactPages; page++ {
		q := url.Values{"page": {strconv.Itoa(page)}, "per_page": {strconv.Itoa(perPage)}}
		var next int
		err := c.do(ctx, fmt.Sprintf("%s (page %d)", what, page), true, func(api *rest) error {
			var as []artifactJSON
			n, err := api.get(path(api), q, &as)
			if err != nil {
				return err
			}
			for _, a := range as {
				out = append(out, artifactFrom(a))
			}
			next = n
			return nil
		})
		if err != nil {
			return nil, err
		}
		if next == 0 {
			return out, nil
		}
	}
	c.log.Warn("stopped reading artifacts at the page limit", "request", what, "pages", maxArtifactPages, "found", len(out))
	return out, nil
}

// DownloadArtifact returns the contents of a, at most MaxArtifactSize
// bytes. The API answers with a redirect to the artifact storage; the
// token is not sent there. Contents are checked against a.SHA1 when set.
func (c *Client) DownloadArtifact(ctx context.Context, a Artifact) ([]byte, error) {
	what := fmt.Sprintf("download artifact %s (%s)", a.Path, a.ID)
	if a.DownloadURL == "" {
		return nil, fmt.Errorf("%s: no download URL", what)
	}
	if a.FileSize > MaxArtifactSize {
		return nil, fmt.Errorf("%s: %w: %d bytes, limit %d", what, ErrArtifactTooLarge, a.FileSize, MaxArtifactSize)
	}
	var data []byte
	err := c.do(ctx, what, true, func(api *rest) error {
		w := &cappedBuffer{limit: MaxArtifactSize}
		if err := api.download(a.DownloadURL, w); err != nil {
			return err
		}
		data = w.buf.Bytes()
		return nil
	})
	if err != nil {
		return nil, err
	}
	if a.SHA1 != "" {
		sum := sha1.Sum(data)
		if got := hex.EncodeToString(sum[:]); got != a.SHA1 {
			return nil, fmt.Errorf("%s: contents have sha1 %s, want %s", what, got, a.SHA1)
		}
	}
	return data, nil
}

// DownloadArtifactFile streams a into a new file in dir (os.TempDir when
// empty), at most MaxStreamedArtifact bytes, checked against a.SHA1, and
// returns its path; the caller removes it. Nothing of it is held in
// memory.
func (c *Client) DownloadArtifactFile(ctx context.Context, a Artifact, dir string) (string, error) {
	what := fmt.Sprintf("download artifact %s (%s)", a.Path, a.ID)
	if a.DownloadURL == "" {
		return "", fmt.Errorf("%s: no download URL", what)
	}
	if a.FileSize > MaxStreamedArtifact {
		return "", fmt.Errorf("%s: %w: %d bytes, limit %d", what, ErrArtifactTooLarge, a.FileSize, int64(MaxStreamedArtifact))
	}
	f, err := os.CreateTemp(dir, "artifact-*")
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	keep := false
	defer func() {
		f.Close()
		if !keep {
			os.Remove(f.Name())
		}
	}()
	var sum []byte
	err = c.do(ctx, what, true, func(api *rest) error {
		// A retry starts the file over.
		if err := f.Truncate(0); err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		h := sha1.New()
		w := &cappedWriter{w: io.MultiWriter(f, h), limit: MaxStreamedArtifact}
		if err := api.download(a.DownloadURL, w); err != nil {
			return err
		}
		sum = h.Sum(nil)
		return nil
	})
	if err != nil {
		return "", err
	}
	if a.SHA1 != "" {
		if got := hex.EncodeToString(sum); got != a.SHA1 {
			return "", fmt.Errorf("%s: contents have sha1 %s, want %s", what, got, a.SHA1)
		}
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	keep = true
	return f.Name(), nil
}

// cappedWriter fails a write that would take it past limit bytes.
type cappedWriter struct {
	w     io.Writer
	n     int64
	limit int64
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	if w.n+int64(len(p)) > w.limit {
		return 0, fmt.Errorf("%w: more than %d bytes", ErrArtifactTooLarge, w.limit)
	}
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

// cappedBuffer fails a write that would take it past limit bytes.
type cappedBuffer struct {
	buf   bytes.Buffer
	limit int
}

func (w *cappedBuffer) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.limit {
		return 0, fmt.Errorf("%w: more than %d bytes", ErrArtifactTooLarge, w.limit)
	}
	return w.buf.Write(p)
}

func artifactFrom(a artifactJSON) Artifact {
	return Artifact{
		ID:          deref(a.ID),
		JobID:       deref(a.JobID),
		Path:        deref(a.Path),
		State:       deref(a.State),
		DownloadURL: deref(a.DownloadURL),
		FileSize:    deref(a.FileSize),
		SHA1:        deref(a.SHA1),
	}
}
