package agentapi

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"
)

// uploadPath is the storage's form-upload path (the instructions' action
// path; the agent keeps the action URL's host and replaces its path).
const uploadPath = "/_artifacts/upload"

// fileInput is the form field the storage reads the file from.
const fileInput = "file"

// artifactIn is the agent's api.Artifact as it sends it.
type artifactIn struct {
	ID                string    `json:"id"`
	Path              string    `json:"path"`
	AbsolutePath      string    `json:"absolute_path"`
	GlobPath          string    `json:"glob_path"`
	FileSize          int64     `json:"file_size"`
	Sha1Sum           string    `json:"sha1sum"`
	Sha256Sum         string    `json:"sha256sum"`
	JobID             string    `json:"job_id"`
	CreatedAt         time.Time `json:"created_at"`
	URL               string    `json:"url"`
	UploadDestination string    `json:"upload_destination"`
	ContentType       string    `json:"content_type"`
}

// batchIn is the agent's api.ArtifactBatch.
type batchIn struct {
	ID                 string        `json:"id"`
	Artifacts          []*artifactIn `json:"artifacts"`
	UploadDestination  string        `json:"upload_destination"`
	MultipartSupported bool          `json:"multipart_supported"`
}

type uploadAction struct {
	URL       string `json:"url"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	FileInput string `json:"file_input"`
}

type uploadInstructions struct {
	Action uploadAction      `json:"action"`
	Data   map[string]string `json:"data"`
}

type batchCreated struct {
	ID                 string              `json:"id"`
	ArtifactIDs        []string            `json:"artifact_ids"`
	UploadInstructions *uploadInstructions `json:"upload_instructions"`
}

// policy is what the signed form fields grant: files under one key
// prefix until a time.
type policy struct {
	Prefix  string    `json:"prefix"`
	Expires time.Time `json:"expires"`
}

// maxBatch is the agent's own chunk size; a larger batch is not one it sends.
const maxBatch = 30

func (s *Server) createArtifacts(w http.ResponseWriter, r *http.Request) {
	var b batchIn
	if err := decode(r, &b); err != nil {
		s.reply(w, r, 0, nil, err)
		return
	}
	if err := checkBatch(&b); err != nil {
		s.reply(w, r, 0, nil, err)
		return
	}
	prefix := s.cfg.JobID + "/" + b.ID + "/"
	pol, _ := json.Marshal(policy{Prefix: prefix, Expires: time.Now().Add(expiry).UTC()})
	enc := base64.StdEncoding.EncodeToString(pol)
	resp := batchCreated{
		ID: b.ID,
		UploadInstructions: &uploadInstructions{
			Action: uploadAction{URL: s.srv.URL, Method: http.MethodPost, Path: uploadPath, FileInput: fileInput},
			Data: map[string]string{
				"key":             prefix + "${artifact:path}",
				"acl":             "private",
				"policy":          enc,
				"x-amz-signature": s.sign(enc),
			},
		},
	}
	s.mu.Lock()
	err := s.record(&b, &resp)
	s.mu.Unlock()
	s.reply(w, r, http.StatusCreated, resp, err)
}

// record keeps a new batch's artifacts and names them in resp.
func (s *Server) record(b *batchIn, resp *batchCreated) error {
	if s.batches[b.ID] {
		return fail(http.StatusUnprocessableEntity, "artifact batch %s was already created", b.ID)
	}
	s.batches[b.ID] = true
	for _, a := range b.Artifacts {
		id := newUUID()
		s.artifacts[id] = &Artifact{
			ID: id, Path: a.Path, ContentType: a.ContentType, Size: a.FileSize,
			SHA1: a.Sha1Sum, SHA256: a.Sha256Sum, State: "new", batch: b.ID,
		}
		resp.ArtifactIDs = append(resp.ArtifactIDs, id)
	}
	return nil
}

// checkBatch accepts a batch as the agent builds one for Buildkite's own
// storage: fresh records (no ID, job or URL yet), relative paths, both
// checksums.
func checkBatch(b *batchIn) error {
	switch {
	case !uuidPattern.MatchString(b.ID):
		return fail(http.StatusUnprocessableEntity, "batch id %q is not a UUID", b.ID)
	case len(b.Artifacts) == 0 || len(b.Artifacts) > maxBatch:
		return fail(http.StatusUnprocessableEntity, "a batch holds 1 to %d artifacts, not %d", maxBatch, len(b.Artifacts))
	case b.UploadDestination != "":
		return fail(http.StatusUnprocessableEntity, "upload destination %q: this API stores artifacts itself", b.UploadDestination)
	}
	seen := map[string]bool{}
	for i, a := range b.Artifacts {
		var problem string
		switch {
		case a.ID != "" || a.JobID != "" || a.URL != "" || a.GlobPath != "" || a.UploadDestination != "" || !a.CreatedAt.IsZero():
			problem = "carries fields the API assigns"
		case a.Path == "" || strings.HasPrefix(a.Path, "/") || slices.Contains(strings.Split(a.Path, "/"), ".."):
			problem = "path must be relative and stay below the working directory"
		case seen[a.Path]:
			problem = "path is twice in the batch"
		case !strings.HasPrefix(a.AbsolutePath, "/") || !strings.HasSuffix(a.AbsolutePath, "/"+a.Path):
			problem = fmt.Sprintf("absolute_path %q does not end in the path", a.AbsolutePath)
		case a.FileSize < 0:
			problem = "negative file_size"
		case !sha1Pattern.MatchString(a.Sha1Sum) || !sha2Pattern.MatchString(a.Sha256Sum):
			problem = "sha1sum and sha256sum must be lower-case hex digests"
		case a.ContentType == "":
			problem = "no content_type"
		}
		if problem != "" {
			return fail(http.StatusUnprocessableEntity, "artifact %d (%q): %s", i, a.Path, problem)
		}
		if _, _, err := mime.ParseMediaType(a.ContentType); err != nil {
			return fail(http.StatusUnprocessableEntity, "artifact %d (%q): content_type: %v", i, a.Path, err)
		}
		seen[a.Path] = true
	}
	return nil
}

// stateIn is the agent's api.ArtifactState.
type stateIn struct {
	ID             string `json:"id"`
	State          string `json:"state"`
	Multipart      bool   `json:"multipart"`
	MultipartETags []struct {
		PartNumber int    `json:"part_number"`
		ETag       string `json:"etag"`
	} `json:"multipart_etags"`
}

func (s *Server) updateArtifacts(w http.ResponseWriter, r *http.Request) {
	var u struct {
		Artifacts []stateIn `json:"artifacts"`
	}
	if err := decode(r, &u); err != nil {
		s.reply(w, r, 0, nil, err)
		return
	}
	s.mu.Lock()
	err := s.applyStates(u.Artifacts)
	s.mu.Unlock()
	s.reply(w, r, http.StatusOK, struct{}{}, err)
}

// applyStates checks every state before changing any.
func (s *Server) applyStates(states []stateIn) error {
	if len(states) == 0 {
		return fail(http.StatusUnprocessableEntity, "no artifact states")
	}
	for _, st := range states {
		a, ok := s.artifacts[st.ID]
		switch {
		case !ok:
			return fail(http.StatusNotFound, "no artifact %q in this job", st.ID)
		case st.Multipart || len(st.MultipartETags) > 0:
			return fail(http.StatusUnprocessableEntity, "artifact %s: no multipart upload was offered", st.ID)
		case st.State == "finished" && a.Content == nil:
			return fail(http.StatusUnprocessableEntity, "artifact %s (%s) finished but the storage never received it", st.ID, a.Path)
		case st.State != "finished" && st.State != "error":
			return fail(http.StatusUnprocessableEntity, "artifact %s: state %q is not finished or error", st.ID, st.State)
		}
	}
	for _, st := range states {
		s.artifacts[st.ID].State = st.State
	}
	return nil
}

// storage takes one form upload, as a bucket does a presigned POST: the
// signed fields first, the file last, no credentials of the agent's.
func (s *Server) storage(w http.ResponseWriter, r *http.Request) {
	err := s.receive(r)
	s.reply(w, r, http.StatusNoContent, nil, err)
}

func (s *Server) receive(r *http.Request) error {
	if r.Method != http.MethodPost {
		return fail(http.StatusMethodNotAllowed, "the storage takes POST, not %s", r.Method)
	}
	if r.Header.Get("Authorization") != "" {
		return fail(http.StatusBadRequest, "a presigned upload must not carry an Authorization header")
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return fail(http.StatusBadRequest, "Content-Type %q is not multipart/form-data", r.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(r.Body, params["boundary"])
	fields := map[string]string{}
	for {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return fail(http.StatusBadRequest, "the form has no %q file", fileInput)
		}
		if err != nil {
			return fail(http.StatusBadRequest, "reading the form: %v", err)
		}
		if p.FormName() != fileInput {
			v, err := readAll(p, 1<<16)
			if err != nil {
				return fail(http.StatusBadRequest, "field %q: %v", p.FormName(), err)
			}
			if _, dup := fields[p.FormName()]; dup {
				return fail(http.StatusBadRequest, "field %q twice", p.FormName())
			}
			fields[p.FormName()] = string(v)
			continue
		}
		a, err := s.grant(fields, p.FileName())
		if err != nil {
			return err
		}
		data, err := readAll(p, a.Size)
		if err != nil {
			return fail(http.StatusBadRequest, "file %s: %v", a.Path, err)
		}
		if _, err := mr.NextPart(); !errors.Is(err, io.EOF) {
			return fail(http.StatusBadRequest, "fields after the file are not read")
		}
		return s.store(a, data)
	}
}

// grant checks the signed fields and returns the artifact they name.
func (s *Server) grant(fields map[string]string, filename string) (*Artifact, error) {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"acl", "key", "policy", "x-amz-signature"}; !slices.Equal(keys, want) {
		return nil, fail(http.StatusBadRequest, "form fields %q, want %q before the file", keys, want)
	}
	if !hmac.Equal([]byte(s.sign(fields["policy"])), []byte(fields["x-amz-signature"])) {
		return nil, fail(http.StatusForbidden, "signature does not match the policy")
	}
	raw, err := base64.StdEncoding.DecodeString(fields["policy"])
	var pol policy
	if err == nil {
		err = json.Unmarshal(raw, &pol)
	}
	if err != nil {
		return nil, fail(http.StatusBadRequest, "policy: %v", err)
	}
	if time.Now().After(pol.Expires) {
		return nil, fail(http.StatusForbidden, "policy expired at %s", pol.Expires)
	}
	rel, ok := strings.CutPrefix(fields["key"], pol.Prefix)
	if !ok || fields["acl"] != "private" {
		return nil, fail(http.StatusForbidden, "key %q or acl %q not granted by the policy", fields["key"], fields["acl"])
	}
	// Part.FileName keeps only the last element of the name sent.
	if filename != path.Base(rel) {
		return nil, fail(http.StatusBadRequest, "file name %q is not the key's file %q", filename, path.Base(rel))
	}
	batch := path.Base(pol.Prefix)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.artifacts {
		if a.Path == rel && a.State == "new" && a.Content == nil && a.batch == batch {
			return a, nil
		}
	}
	return nil, fail(http.StatusForbidden, "no artifact %q awaits an upload", rel)
}

// store keeps the file if it is the one the API was told of.
func (s *Server) store(a *Artifact, data []byte) error {
	s1, s2 := sha1.Sum(data), sha256.Sum256(data)
	if int64(len(data)) != a.Size || hex.EncodeToString(s1[:]) != a.SHA1 || hex.EncodeToString(s2[:]) != a.SHA256 {
		return fail(http.StatusBadRequest, "%s: %d bytes that do not match the %d bytes and checksums declared", a.Path, len(data), a.Size)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if a.Content != nil {
		return fail(http.StatusConflict, "%s was already uploaded", a.Path)
	}
	a.Content = bytes.Clone(data)
	if a.Content == nil {
		a.Content = []byte{}
	}
	return nil
}
