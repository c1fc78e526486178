package bkapitest

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"path"
	"time"
)

// The JSON shapes below follow the REST API's build, job and artifact
// objects, nulls included.

type buildJSON struct {
	ID           string            `json:"id"`
	GraphQLID    string            `json:"graphql_id"`
	URL          string            `json:"url"`
	WebURL       string            `json:"web_url"`
	Number       int               `json:"number"`
	State        string            `json:"state"`
	CancelReason *string           `json:"cancel_reason"`
	Blocked      bool              `json:"blocked"`
	Message      string            `json:"message"`
	Commit       string            `json:"commit"`
	Branch       string            `json:"branch"`
	Tag          *string           `json:"tag"`
	Env          map[string]string `json:"env"`
	Source       string            `json:"source"`
	Creator      *creatorJSON      `json:"creator"`
	Jobs         []jobJSON         `json:"jobs"`
	CreatedAt    *string           `json:"created_at"`
	ScheduledAt  *string           `json:"scheduled_at"`
	StartedAt    *string           `json:"started_at"`
	FinishedAt   *string           `json:"finished_at"`
	MetaData     map[string]string `json:"meta_data"`
	PullRequest  any               `json:"pull_request"`
	RebuiltFrom  any               `json:"rebuilt_from"`
	Pipeline     pipelineRefJSON   `json:"pipeline"`
}

type creatorJSON struct {
	ID        string  `json:"id"`
	Name      string  `json:"name"`
	Email     string  `json:"email"`
	AvatarURL string  `json:"avatar_url"`
	CreatedAt *string `json:"created_at"`
}

type pipelineRefJSON struct {
	ID   string `json:"id"`
	URL  string `json:"url"`
	Name string `json:"name"`
	Slug string `json:"slug"`
}

type jobJSON struct {
	ID                 string   `json:"id"`
	GraphQLID          string   `json:"graphql_id"`
	Type               string   `json:"type"`
	Name               *string  `json:"name,omitempty"`
	Label              *string  `json:"label,omitempty"`
	StepKey            *string  `json:"step_key"`
	State              string   `json:"state"`
	WebURL             *string  `json:"web_url"`
	LogURL             *string  `json:"log_url,omitempty"`
	RawLogURL          *string  `json:"raw_log_url,omitempty"`
	ArtifactsURL       *string  `json:"artifacts_url,omitempty"`
	Command            *string  `json:"command,omitempty"`
	SoftFailed         bool     `json:"soft_failed"`
	ExitStatus         *int     `json:"exit_status"`
	ArtifactPaths      *string  `json:"artifact_paths,omitempty"`
	AgentQueryRules    []string `json:"agent_query_rules,omitempty"`
	Agent              any      `json:"agent"`
	CreatedAt          *string  `json:"created_at"`
	ScheduledAt        *string  `json:"scheduled_at"`
	RunnableAt         *string  `json:"runnable_at"`
	StartedAt          *string  `json:"started_at"`
	FinishedAt         *string  `json:"finished_at"`
	Retried            bool     `json:"retried"`
	RetriedInJobID     *string  `json:"retried_in_job_id"`
	RetriesCount       *int     `json:"retries_count"`
	Signal             *string  `json:"signal"`
	SignalReason       *string  `json:"signal_reason"`
	ParallelGroupIndex *int     `json:"parallel_group_index"`
	ParallelGroupTotal *int     `json:"parallel_group_total"`
}

type artifactJSON struct {
	ID           string  `json:"id"`
	JobID        string  `json:"job_id"`
	URL          string  `json:"url"`
	DownloadURL  string  `json:"download_url"`
	State        string  `json:"state"`
	Path         string  `json:"path"`
	Dirname      string  `json:"dirname"`
	Filename     string  `json:"filename"`
	MimeType     string  `json:"mime_type"`
	FileSize     int64   `json:"file_size"`
	GlobPath     *string `json:"glob_path"`
	OriginalPath *string `json:"original_path"`
	SHA1         string  `json:"sha1sum"`
}

// buildJSON is b as the API serves it; a retried job is listed only when
// the request asked for them (include_retried_jobs=true), as the API does.
func (s *Server) buildJSON(b Build, includeRetried bool) buildJSON {
	buildPath := fmt.Sprintf("v2/organizations/%s/pipelines/%s/builds/%d", s.Org, s.Pipeline, b.Number)
	webURL := fmt.Sprintf("https://buildkite.com/%s/%s/builds/%d", s.Org, s.Pipeline, b.Number)
	env := b.Env
	if env == nil {
		env = map[string]string{}
	}
	out := buildJSON{
		ID:          fmt.Sprintf("01908131-7d9f-495e-a17b-%012x", b.Number),
		GraphQLID:   fmt.Sprintf("QnVpbGQtLS0wMTkwODEzMS03ZDlm%d", b.Number),
		URL:         s.URL + buildPath,
		WebURL:      webURL,
		Number:      b.Number,
		State:       b.State,
		Message:     b.Message,
		Commit:      b.Commit,
		Branch:      b.Branch,
		Env:         env,
		Source:      b.Source,
		Jobs:        []jobJSON{},
		CreatedAt:   timestamp(b.CreatedAt),
		ScheduledAt: timestamp(b.CreatedAt),
		StartedAt:   timestamp(b.CreatedAt),
		FinishedAt:  timestamp(b.FinishedAt),
		MetaData:    map[string]string{},
		Pipeline: pipelineRefJSON{
			ID:   "01908131-7d9f-495e-a17b-80ed31276810",
			URL:  s.apiURL("v2/organizations/%s/pipelines/%s", s.Org, s.Pipeline),
			Name: s.Pipeline,
			Slug: s.Pipeline,
		},
	}
	if b.Source != "schedule" {
		out.Creator = &creatorJSON{
			ID:        "3d3c3bf0-7d58-4afe-8fe7-b3017d5504de",
			Name:      "Keith Pitt",
			Email:     "keith@example.com",
			AvatarURL: "https://www.gravatar.com/avatar/e14f55d3f939977cecbf51b64ff6f861",
			CreatedAt: timestamp(b.CreatedAt),
		}
	}
	for i, j := range b.Jobs {
		if j.Retried && !includeRetried {
			continue
		}
		out.Jobs = append(out.Jobs, s.jobJSON(b, i, j, buildPath, webURL))
	}
	return out
}

func (s *Server) jobJSON(b Build, i int, j Job, buildPath, buildWebURL string) jobJSON {
	if j.ID == "" {
		j.ID = fmt.Sprintf("b63254c0-3271-4a98-8270-%06x%06x", b.Number, i)
	}
	if j.Type == "" {
		j.Type = "script"
	}
	if j.State == "" {
		j.State = "passed"
	}
	out := jobJSON{
		ID:        j.ID,
		GraphQLID: "Sm9iLS0t" + j.ID,
		Type:      j.Type,
		State:     j.State,
	}
	if j.Type == "waiter" {
		return out
	}
	label := j.Label
	if label == "" {
		label = j.StepKey
	}
	jobPath := fmt.Sprintf("%s/jobs/%s", buildPath, j.ID)
	webURL := buildWebURL + "#" + j.ID
	cmd := "runner run"
	rc := 0
	if j.State != "passed" {
		rc = 1
	}
	if j.ExitStatus != nil {
		rc = *j.ExitStatus
	}
	out.SoftFailed = j.SoftFailed
	out.Name = &label
	out.Label = &label
	if j.StepKey != "" {
		out.StepKey = &j.StepKey
	}
	out.WebURL = &webURL
	logURL, rawLogURL, artifactsURL := s.URL+jobPath+"/log", s.URL+jobPath+"/log.txt", s.URL+jobPath+"/artifacts"
	out.LogURL, out.RawLogURL, out.ArtifactsURL = &logURL, &rawLogURL, &artifactsURL
	out.Command = &cmd
	out.ExitStatus = &rc
	out.AgentQueryRules = []string{"queue=gpu"}
	out.CreatedAt = timestamp(b.CreatedAt)
	out.ScheduledAt = timestamp(b.CreatedAt)
	out.RunnableAt = timestamp(b.CreatedAt)
	out.StartedAt = timestamp(b.CreatedAt)
	out.FinishedAt = timestamp(b.FinishedAt)
	if !j.StartedAt.IsZero() {
		out.StartedAt = timestamp(j.StartedAt)
	}
	if !j.FinishedAt.IsZero() {
		out.FinishedAt = timestamp(j.FinishedAt)
	}
	out.Retried = j.Retried
	if j.RetriedInJobID != "" {
		out.RetriedInJobID = &j.RetriedInJobID
	}
	if j.Signal != "" {
		out.Signal = &j.Signal
	}
	if j.SignalReason != "" {
		out.SignalReason = &j.SignalReason
	}
	return out
}

func (s *Server) artifactJSON(a storedArtifact) artifactJSON {
	jobPath := fmt.Sprintf("v2/organizations/%s/pipelines/%s/builds/%d/jobs/%s", s.Org, s.Pipeline, a.BuildNumber, a.JobID)
	dir, file := path.Split(a.Path)
	return artifactJSON{
		ID:          a.ID,
		JobID:       a.JobID,
		URL:         s.URL + jobPath + "/artifacts/" + a.ID,
		DownloadURL: s.URL + jobPath + "/artifacts/" + a.ID + "/download",
		State:       a.State,
		Path:        a.Path,
		Dirname:     path.Clean(dir),
		Filename:    file,
		MimeType:    "application/json",
		FileSize:    int64(len(a.Content)),
		SHA1:        sha1Hex(a.Content),
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func timestamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format("2006-01-02T15:04:05.000Z")
	return &s
}

func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}
