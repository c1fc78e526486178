package bkapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// rest is one attempt's view of the REST API: JSON requests with the
// token, under the attempt's context (carried by the transport).
type rest struct {
	c  *Client
	hc *http.Client
}

// maxResponse bounds a JSON answer of the API; maxErrorBody what is read
// of an error answer.
const (
	maxResponse  = 64 << 20
	maxErrorBody = 64 << 10
)

// pipelinePath is the API path of the client's pipeline plus the parts
// after it, each escaped.
func (r *rest) pipelinePath(parts ...string) string {
	p := "v2/organizations/" + url.PathEscape(r.c.cfg.Org) + "/pipelines/" + url.PathEscape(r.c.cfg.Pipeline)
	for _, s := range parts {
		p += "/" + url.PathEscape(s)
	}
	return p
}

func (r *rest) newRequest(method, path string, query url.Values, body any) (*http.Request, error) {
	u, err := r.c.base.Parse(path)
	if err != nil {
		return nil, err
	}
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Authorization", "Bearer "+r.c.cfg.Token)
	return req, nil
}

// send does req and returns a 2xx response; any other status is a
// *StatusError with the "message" of its JSON body.
func (r *rest) send(req *http.Request) (*http.Response, error) {
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	var doc struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &doc)
	final := req.URL
	if resp.Request != nil {
		final = resp.Request.URL
	}
	return nil, &StatusError{
		Method:      req.Method,
		URL:         stripQuery(final),
		StatusCode:  resp.StatusCode,
		Message:     redact(doc.Message, r.c.cfg.Token),
		RetryAfter:  retryAfter(resp.Header),
		FromStorage: !sameOrigin(final, r.c.base),
	}
}

// get reads the JSON at path into out and returns the next page's
// number from the Link header, 0 on the last page.
func (r *rest) get(path string, query url.Values, out any) (int, error) {
	req, err := r.newRequest(http.MethodGet, path, query, nil)
	if err != nil {
		return 0, err
	}
	resp, err := r.send(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(out); err != nil {
		return 0, fmt.Errorf("%s %s: read the answer: %w", req.Method, stripQuery(req.URL), err)
	}
	return nextPage(resp.Header.Get("Link")), nil
}

// post sends body as JSON to path and reads the answer into out.
func (r *rest) post(path string, body, out any) error {
	req, err := r.newRequest(http.MethodPost, path, nil, body)
	if err != nil {
		return err
	}
	resp, err := r.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(out); err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", req.Method, stripQuery(req.URL), err)
	}
	return nil
}

// download copies what rawURL (an artifact's download URL, which
// redirects to the storage) serves into w.
func (r *rest) download(rawURL string, w io.Writer) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return fmt.Errorf("artifact download URL: %w", err)
	}
	req, err := r.newRequest(http.MethodGet, u.String(), nil, nil)
	if err != nil {
		return err
	}
	req.URL.RawQuery = u.RawQuery
	req.Header.Del("Accept")
	resp, err := r.send(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(w, resp.Body)
	return err
}

// nextPage is the page number of a Link header's rel="next", 0 without
// one.
func nextPage(link string) int {
	for _, part := range strings.Split(link, ",") {
		target, params, ok := strings.Cut(part, ";")
		if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			continue
		}
		u, err := url.Parse(strings.Trim(strings.TrimSpace(target), "<>"))
		if err != nil {
			return 0
		}
		n, err := strconv.Atoi(u.Query().Get("page"))
		if err != nil {
			return 0
		}
		return n
	}
	return 0
}

// The API's objects, as far as they are read.

type buildJSON struct {
	ID         *string        `json:"id"`
	Number     *int           `json:"number"`
	State      *string        `json:"state"`
	Source     *string        `json:"source"`
	Branch     *string        `json:"branch"`
	Commit     *string        `json:"commit"`
	Message    *string        `json:"message"`
	WebURL     *string        `json:"web_url"`
	CreatedAt  *time.Time     `json:"created_at"`
	FinishedAt *time.Time     `json:"finished_at"`
	Env        map[string]any `json:"env"`
	Jobs       []*jobJSON     `json:"jobs"`
}

type jobJSON struct {
	ID             *string    `json:"id"`
	StepKey        *string    `json:"step_key"`
	Label          *string    `json:"label"`
	State          *string    `json:"state"`
	SoftFailed     bool       `json:"soft_failed"`
	ExitStatus     *int       `json:"exit_status"`
	Retried        bool       `json:"retried"`
	RetriedInJobID string     `json:"retried_in_job_id"`
	Signal         *string    `json:"signal"`
	SignalReason   *string    `json:"signal_reason"`
	StartedAt      *time.Time `json:"started_at"`
	FinishedAt     *time.Time `json:"finished_at"`
}

type artifactJSON struct {
	ID          *string `json:"id"`
	JobID       *string `json:"job_id"`
	Path        *string `json:"path"`
	State       *string `json:"state"`
	DownloadURL *string `json:"download_url"`
	FileSize    *int64  `json:"file_size"`
	SHA1        *string `json:"sha1sum"`
}

type pipelineJSON struct {
	DefaultBranch *string `json:"default_branch"`
}

type createBuildJSON struct {
	Commit  string            `json:"commit"`
	Branch  string            `json:"branch"`
	Message string            `json:"message,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

type annotationJSON struct {
	Body    string `json:"body"`
	Context string `json:"context,omitempty"`
	Style   string `json:"style,omitempty"`
}
