package agentapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"mime"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/agentapi"
	"github.com/benchkite/benchkite/steps/steptest"
)

const (
	token = "agentapi-test-token-0123456789"
	jobID = "0190b1e4-0000-4000-8000-000000000001"
)

func start(t *testing.T) *agentapi.Server {
	t.Helper()
	s := agentapi.Start(agentapi.Config{Token: token, JobID: jobID, Secrets: map[string]string{"BENCHKITE_API_TOKEN": "s3cr3t-value"}})
	t.Cleanup(s.Close)
	return s
}

// agent runs the real buildkite-agent in dir with a job's variables
// pointing at s, plus extra ones.
func agent(t *testing.T, s *agentapi.Server, dir string, stdin string, extra []string, args ...string) (string, error) {
	t.Helper()
	bin := steptest.AgentBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + dir,
		"BUILDKITE_AGENT_ACCESS_TOKEN=" + token,
		"BUILDKITE_AGENT_ENDPOINT=" + s.Endpoint(),
		"BUILDKITE_JOB_ID=" + jobID,
		"BUILDKITE_BUILD_ID=0190b1e4-1111-4000-8000-000000000042",
	}, extra...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	return out.String(), err
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sum(data string) string {
	h := sha256.Sum256([]byte(data))
	return hex.EncodeToString(h[:])
}

// The real agent's artifact upload creates the records, posts each file
// to the storage with the signed form, and marks them finished.
func TestRealAgentArtifactUpload(t *testing.T) {
	t.Parallel()
	s := start(t)
	dir := t.TempDir()
	files := map[string]string{
		"results/r/summary.json":      `{"verdict":"pass"}` + "\n",
		"results/r/annotation.md":     "### ✅ pass\n",
		"results/r/bench/run-1.json":  strings.Repeat("x", 70000),
		"results/r/logs/empty.json":   "",
		"results/r/name with space.x": "odd name",
		"elsewhere/not-uploaded.txt":  "no",
	}
	for p, d := range files {
		write(t, filepath.Join(dir, p), d)
	}
	out, err := agent(t, s, dir, "", nil, "artifact", "upload", "results/r/**/*")
	if err != nil {
		t.Fatalf("artifact upload: %v\n%s", err, out)
	}
	if r := s.Rejected(); len(r) != 0 {
		t.Errorf("the API refused requests of the real agent: %q", r)
	}
	type got struct {
		Path, State, ContentType, SHA256, Content string
	}
	var have []got
	for _, a := range s.Artifacts() {
		have = append(have, got{a.Path, a.State, a.ContentType, a.SHA256, string(a.Content)})
	}
	var want []got
	for _, p := range []string{"results/r/annotation.md", "results/r/bench/run-1.json", "results/r/logs/empty.json", "results/r/name with space.x", "results/r/summary.json"} {
		// The agent's rule: the system's type for the extension, else
		// binary/octet-stream.
		ct := mime.TypeByExtension(filepath.Ext(p))
		if ct == "" {
			ct = "binary/octet-stream"
		}
		want = append(want, got{p, "finished", ct, sum(files[p]), files[p]})
	}
	if diff := cmp.Diff(have, want); diff != "" {
		t.Errorf("artifacts diff (-got +want):\n%s\nagent output:\n%s", diff, out)
	}
}

func TestRealAgentAnnotateAndSecret(t *testing.T) {
	t.Parallel()
	s := start(t)
	dir := t.TempDir()
	body := "### ✅ `r`: pass\n\n| a | b |\n"
	if out, err := agent(t, s, dir, body, nil, "annotate", "--context", "r", "--style", "success", "--priority", "7"); err != nil {
		t.Fatalf("annotate: %v\n%s", err, out)
	}
	got, ok := s.Annotation("r")
	want := agentapi.Annotation{Context: "r", Style: "success", Priority: 7, Scope: "build", Body: body}
	if diff := cmp.Diff(got, want); !ok || diff != "" {
		t.Errorf("annotation diff (-got +want):\n%s", diff)
	}
	if out, err := agent(t, s, dir, "", nil, "annotate", "more", "--context", "r", "--append"); err != nil {
		t.Fatalf("annotate --append: %v\n%s", err, out)
	}
	// The agent always sends a priority, its default 3 when none is given.
	got, _ = s.Annotation("r")
	want.Body, want.Priority = body+"more", 3
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("appended annotation diff (-got +want):\n%s", diff)
	}
	// Outside a job the agent cannot reach the Job API socket that
	// redacts secrets from the log, so it must be told to skip that.
	skip := []string{"BUILDKITE_AGENT_SECRET_GET_SKIP_SECRET_REDACTION=true"}
	out, err := agent(t, s, dir, "", skip, "secret", "get", "BENCHKITE_API_TOKEN")
	if err != nil || strings.TrimSpace(out) != "s3cr3t-value" {
		t.Errorf("secret get = %q, %v; want the value", out, err)
	}
	if _, err := agent(t, s, dir, "", skip, "secret", "get", "NOPE"); err == nil {
		t.Errorf("secret get of a missing secret succeeded")
	}
	if r := s.Rejected(); len(r) != 1 || !strings.Contains(r[0], `secret "NOPE" not found`) {
		t.Errorf("rejected = %q, want only the missing secret", r)
	}
}

// What the agent uploads is what its own dry run prints.
func TestRealAgentPipelineUpload(t *testing.T) {
	t.Parallel()
	s := start(t)
	dir := t.TempDir()
	src := `{"steps":[{"label":"a","command":"echo $$HOME","key":"a"},{"wait":null},{"label":"b","command":["x","y"],"env":{"K":"v"}}]}`
	write(t, filepath.Join(dir, "p.json"), src)
	if out, err := agent(t, s, dir, "", nil, "pipeline", "upload", "p.json"); err != nil {
		t.Fatalf("pipeline upload: %v\n%s", err, out)
	}
	dry := steptest.DryRun(t, steptest.AgentBinary(t), []byte(src))
	ps := s.Pipelines()
	if len(ps) != 1 {
		t.Fatalf("pipelines received: %d, want 1", len(ps))
	}
	var got map[string]any
	if err := json.Unmarshal(ps[0].Pipeline, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, dry); diff != "" {
		t.Errorf("uploaded pipeline differs from the dry run (-got +want):\n%s", diff)
	}
	if r := s.Rejected(); len(r) != 0 {
		t.Errorf("rejected: %q", r)
	}
}

// The API refuses what the real one refuses, and the agent fails.
func TestRefusals(t *testing.T) {
	t.Parallel()
	s := start(t)
	dir := t.TempDir()
	write(t, filepath.Join(dir, "f.txt"), "x")
	tests := []struct {
		name  string
		extra []string
		args  []string
		want  string
	}{
		{"wrong token", []string{"BUILDKITE_AGENT_ACCESS_TOKEN=other-token-0123456789"}, []string{"annotate", "x"}, "401"},
		{"another job", []string{"BUILDKITE_JOB_ID=0190b1e4-0000-4000-8000-000000000099"}, []string{"annotate", "x"}, "403"},
		{"bad style", []string{"BUILDKITE_ANNOTATION_STYLE=loud"}, []string{"annotate", "x"}, "style"},
		{"priority out of range", nil, []string{"annotate", "x", "--priority", "11"}, "priority 11"},
	}
	for _, tt := range tests {
		// Serial: the rejections are read after each.
		before := len(s.Rejected())
		out, err := agent(t, s, dir, "", tt.extra, tt.args...)
		if err == nil {
			t.Errorf("%s: the agent succeeded:\n%s", tt.name, out)
			continue
		}
		r := s.Rejected()[before:]
		if !strings.Contains(strings.Join(r, "\n"), tt.want) {
			t.Errorf("%s: rejected %q, want one with %q", tt.name, r, tt.want)
		}
	}

	// A request the agent would never send: an unknown field.
	req, _ := http.NewRequest(http.MethodPost, s.Endpoint()+"/jobs/"+jobID+"/annotations", strings.NewReader(`{"body":"x","colour":"red"}`))
	req.Header.Set("Authorization", "Token "+token)
	req.Header.Set("User-Agent", "buildkite-agent/3.138.1.x (linux; amd64)")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("unknown field: status %d, want 400", resp.StatusCode)
	}
}
