// Package agentapi serves, on loopback, the part of Buildkite's agent API
// that a job's `buildkite-agent artifact upload`, `annotate`, `pipeline
// upload` and `secret get` call, so tests can run the real agent binary
// (BUILDKITE_AGENT_ENDPOINT pointed here) and see what Buildkite would
// receive.
//
// It follows the agent's client (github.com/buildkite/agent/v3, api/ and
// internal/artifact): every API request carries "Authorization: Token
// <job token>" and a buildkite-agent User-Agent, names the job the token
// belongs to, and sends JSON with exactly the fields the agent's types
// have. Artifacts go through Buildkite's default storage: the create call
// answers with form-upload instructions, the agent POSTs each file as
// multipart/form-data to the storage URL with the signed fields it was
// given, then reports the artifact finished. Anything else is refused
// with the status and JSON error body the agent reads, and recorded
// (Rejected), so a test can insist nothing was refused.
package agentapi

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config is the one job the API serves.
type Config struct {
	Token   string            // the job's BUILDKITE_AGENT_ACCESS_TOKEN
	JobID   string            // BUILDKITE_JOB_ID
	Secrets map[string]string // what `secret get` may read
}

// Artifact is an uploaded file as the API and the storage hold it.
type Artifact struct {
	ID          string
	Path        string
	ContentType string
	Size        int64
	SHA1        string
	SHA256      string
	State       string // "new", "finished" or "error"
	Content     []byte // nil until the storage received it

	batch string
}

// Annotation is one annotation context of the build.
type Annotation struct {
	Context  string
	Style    string
	Priority int
	Scope    string
	Body     string
}

// Pipeline is one accepted pipeline upload.
type Pipeline struct {
	UUID     string
	Replace  bool
	Pipeline json.RawMessage
}

// Server is the stand-in API and its artifact storage.
type Server struct {
	cfg     Config
	srv     *httptest.Server
	signKey []byte

	mu          sync.Mutex
	artifacts   map[string]*Artifact // by ID
	batches     map[string]bool
	annotations map[string]*Annotation // by context
	pipelines   []Pipeline
	rejected    []string
}

// Start serves cfg's job on a loopback port until Close.
func Start(cfg Config) *Server {
	s := &Server{
		cfg:         cfg,
		signKey:     []byte(newUUID()),
		artifacts:   map[string]*Artifact{},
		batches:     map[string]bool{},
		annotations: map[string]*Annotation{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v3/", s.api)
	mux.HandleFunc(uploadPath, s.storage)
	// Assigned before it serves: the handlers read s.srv.
	s.srv = httptest.NewUnstartedServer(mux)
	s.srv.Start()
	return s
}

// Endpoint is the value for BUILDKITE_AGENT_ENDPOINT.
func (s *Server) Endpoint() string { return s.srv.URL + "/v3" }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Artifacts returns every artifact created, sorted by path.
func (s *Server) Artifacts() []Artifact {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Artifact
	for _, a := range s.artifacts {
		c := *a
		c.Content = slices.Clone(a.Content)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Artifact) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// Annotation returns the annotation of a context.
func (s *Server) Annotation(context string) (Annotation, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.annotations[context]
	if !ok {
		return Annotation{}, false
	}
	return *a, true
}

// Pipelines returns the accepted uploads in order.
func (s *Server) Pipelines() []Pipeline {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.pipelines)
}

// Rejected lists every refused request with why.
func (s *Server) Rejected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rejected)
}

// apiError is a refusal: the status and the message the agent shows.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func fail(status int, format string, args ...any) error {
	return &apiError{status: status, msg: fmt.Sprintf(format, args...)}
}

// reply writes v as JSON with status, or the error as Buildkite's
// {"message": ...} body, recording the refusal.
func (s *Server) reply(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if err != nil {
		ae := &apiError{status: http.StatusInternalServerError, msg: err.Error()}
		errors.As(err, &ae)
		s.mu.Lock()
		s.rejected = append(s.rejected, fmt.Sprintf("%s %s: %d %s", r.Method, r.URL.RequestURI(), ae.status, ae.msg))
		s.mu.Unlock()
		w.WriteHeader(ae.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": ae.msg})
		return
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

var (
	jobRoute     = regexp.MustCompile(`^/v3/jobs/([^/]+)/(artifacts|annotations|pipelines|secrets)(?:/([^/]+))?$`)
	uuidPattern  = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	hexOf        = func(n int) *regexp.Regexp { return regexp.MustCompile(fmt.Sprintf(`^[0-9a-f]{%d}$`, n)) }
	sha1Pattern  = hexOf(40)
	sha2Pattern  = hexOf(64)
	agentUAStart = "buildkite-agent/"
)

// api routes /v3/jobs/<job>/... after checking what every agent API
// request carries.
func (s *Server) api(w http.ResponseWriter, r *http.Request) {
	m := jobRoute.FindStringSubmatch(r.URL.EscapedPath())
	if m == nil {
		s.reply(w, r, 0, nil, fail(http.StatusNotFound, "No route matches %s %s", r.Method, r.URL.Path))
		return
	}
	job, kind, sub := m[1], m[2], m[3]
	if err := s.authorize(r, job); err != nil {
		s.reply(w, r, 0, nil, err)
		return
	}
	switch {
	case kind == "artifacts" && sub == "" && r.Method == http.MethodPost:
		s.createArtifacts(w, r)
	case kind == "artifacts" && sub == "" && r.Method == http.MethodPut:
		s.updateArtifacts(w, r)
	case kind == "annotations" && sub == "" && r.Method == http.MethodPost:
		s.annotate(w, r)
	case kind == "pipelines" && sub == "" && r.Method == http.MethodPost:
		s.uploadPipeline(w, r)
	case kind == "pipelines" && sub != "" && r.Method == http.MethodGet:
		s.pipelineStatus(w, r, sub)
	case kind == "secrets" && sub == "" && r.Method == http.MethodGet:
		s.secret(w, r)
	default:
		s.reply(w, r, 0, nil, fail(http.StatusNotFound, "No route matches %s %s", r.Method, r.URL.Path))
	}
}

func (s *Server) authorize(r *http.Request, job string) error {
	if got := r.Header.Get("Authorization"); got != "Token "+s.cfg.Token {
		return fail(http.StatusUnauthorized, "Authentication required. Please supply a valid agent access token in the Authorization header")
	}
	if !strings.HasPrefix(r.Header.Get("User-Agent"), agentUAStart) {
		return fail(http.StatusBadRequest, "User-Agent %q is not buildkite-agent's", r.Header.Get("User-Agent"))
	}
	if job != s.cfg.JobID {
		return fail(http.StatusForbidden, "The access token is not for job %s", job)
	}
	return nil
}

// decode reads a JSON body into v, refusing another content type, unknown
// fields and trailing data: the agent's types are the whole schema.
func decode(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		return fail(http.StatusUnsupportedMediaType, "Content-Type %q, want application/json", ct)
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fail(http.StatusBadRequest, "invalid JSON body: %v", err)
	}
	if dec.More() {
		return fail(http.StatusBadRequest, "invalid JSON body: data after the object")
	}
	return nil
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// sign is the storage's signature of a policy, as a presigned form's.
func (s *Server) sign(policy string) string {
	m := hmac.New(sha256.New, s.signKey)
	m.Write([]byte(policy))
	return hex.EncodeToString(m.Sum(nil))
}

// readAll reads a request body of at most limit bytes.
func readAll(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fail(http.StatusRequestEntityTooLarge, "body larger than %d bytes", limit)
	}
	return data, nil
}

// expiry keeps policies short-lived, as presigned forms are.
const expiry = 10 * time.Minute
