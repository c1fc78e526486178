package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testAgent runs commands in-process against temp directories.
type testAgent struct {
	t   *testing.T
	env map[string]string
	dir string
}

func newTestAgent(t *testing.T) *testAgent {
	t.Helper()
	root := t.TempDir()
	return &testAgent{t: t, dir: filepath.Join(root, "work"), env: map[string]string{
		envLog:         filepath.Join(root, "agent.jsonl"),
		envArtifacts:   filepath.Join(root, "artifacts"),
		envAnnotations: filepath.Join(root, "annotations"),
	}}
}

func (ta *testAgent) run(stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	environ := []string{"BUILDKITE_JOB_ID=job-1", "BUILDKITE_AGENT_ACCESS_TOKEN=secret", "HOME=/nowhere"}
	a := &agent{
		getenv:  func(k string) string { return ta.env[k] },
		environ: environ,
		stdin:   strings.NewReader(stdin),
		stdout:  &out,
		stderr:  &errOut,
		dir:     ta.dir,
	}
	code = a.run(args)
	return code, out.String(), errOut.String()
}

func (ta *testAgent) write(rel, content string) {
	ta.t.Helper()
	p := filepath.Join(ta.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		ta.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		ta.t.Fatal(err)
	}
}

func (ta *testAgent) read(path string) string {
	ta.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		ta.t.Fatal(err)
	}
	return string(data)
}

func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func TestGlob(t *testing.T) {
	t.Parallel()
	paths := []string{"a.json", "results/a.json", "results/x/y/b.json", "results/b.txt", "logs/s.log", "logs/sub/t.log", "c1.md", "cz.md", "{x}"}
	tests := []struct {
		pattern string
		want    []string
	}{
		{"results/**/*.json", []string{"results/a.json", "results/x/y/b.json"}},
		{"**/*.json", []string{"a.json", "results/a.json", "results/x/y/b.json"}},
		{"logs/*.log", []string{"logs/s.log"}},
		{"results/*", []string{"results/a.json", "results/b.txt"}},
		{"{a,results/b}.*", []string{"a.json", "results/b.txt"}},
		{"c[1]?md", []string{"c1.md"}},
		{"c[^1].md", []string{"cz.md"}},
		{`\{x\}`, []string{"{x}"}},
		{"results/**", []string{"results/a.json", "results/x/y/b.json", "results/b.txt"}},
	}
	for _, tt := range tests {
		re, err := globRegexp(tt.pattern)
		if err != nil {
			t.Fatalf("globRegexp(%q) error = %v", tt.pattern, err)
		}
		var got []string
		for _, p := range paths {
			if re.MatchString(p) {
				got = append(got, p)
			}
		}
		if diff := cmp.Diff(got, tt.want); diff != "" {
			t.Errorf("glob %q diff (-got +want):\n%s", tt.pattern, diff)
		}
	}
	for _, bad := range []string{"[abc", "{a,b"} {
		if _, err := globRegexp(bad); err == nil {
			t.Errorf("globRegexp(%q) error = nil", bad)
		}
	}
	for pattern, want := range map[string]string{"results/**/*.json": "results", "*.json": "", "/tmp/x/*.log": "/tmp/x", "a/b{c}/d": "a"} {
		if got := globRoot(pattern); got != want {
			t.Errorf("globRoot(%q) = %q, want %q", pattern, got, want)
		}
	}
}

func TestArtifactUpload(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	ta.write("results/bench/r1.json", "{}")
	ta.write("results/eval/deep/r2.json", "[]")
	ta.write("results/notes.txt", "x")
	ta.write("logs/serve.log", "log")
	code, _, stderr := ta.run("", "artifact", "upload", "results/**/*.json;logs/*.log")
	if code != 0 {
		t.Fatalf("artifact upload exit = %d: %s", code, stderr)
	}
	want := []string{"logs/serve.log", "results/bench/r1.json", "results/eval/deep/r2.json"}
	if diff := cmp.Diff(listFiles(t, ta.env[envArtifacts]), want); diff != "" {
		t.Errorf("uploaded files diff (-got +want):\n%s", diff)
	}
	if got := ta.read(filepath.Join(ta.env[envArtifacts], "results/eval/deep/r2.json")); got != "[]" {
		t.Errorf("copied content = %q", got)
	}
	if code, _, stderr := ta.run("", "artifact", "upload", "nothing/*.x"); code != 0 || !strings.Contains(stderr, "No files matched paths: nothing/*.x") {
		t.Errorf("upload without matches = %d, %q; want 0 and a notice", code, stderr)
	}
	for _, args := range [][]string{{"artifact", "upload", "--literal", "logs/serve.log"}, {"artifact", "upload", "~/x"}} {
		if code, _, stderr := ta.run("", args...); code != 1 || !strings.Contains(stderr, "not supported by this stand-in") {
			t.Errorf("%q = %d, %q; want 1 and not supported", args, code, stderr)
		}
	}
}

func TestAnnotate(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	dir := ta.env[envAnnotations]
	steps := []struct {
		stdin    string
		args     []string
		wantCode int
		wantBody string
	}{
		{"", []string{"annotate", "# Bench", "--style", "info", "--context", "bench/h200"}, 0, "# Bench"},
		{"\nmore", []string{"annotate", "--context", "bench/h200", "--append"}, 1, "# Bench"},
		{"", []string{"annotate", "--style", "error", "--context", "bench/h200"}, 0, "# Bench"},
		{"new", []string{"annotate", "--context=bench/h200"}, 0, "new"},
		{"", []string{"annotate", "x", "--style", "purple", "--context", "bench/h200"}, 1, "new"},
		{strings.Repeat("x", maxAnnotationBody+1), []string{"annotate", "--context", "bench/h200"}, 1, "new"},
		{"", []string{"annotate", "x", "--priority", "11", "--context", "bench/h200"}, 1, "new"},
		{"", []string{"annotate", "x", "--priority", "5abc", "--context", "bench/h200"}, 1, "new"},
		{"top", []string{"annotate", "--priority", "10", "--context", "bench/h200"}, 0, "top"},
	}
	for i, s := range steps {
		code, _, stderr := ta.run(s.stdin, s.args...)
		if code != s.wantCode {
			t.Errorf("step %d: %q exit = %d, want %d; stderr %q", i, s.args, code, s.wantCode, stderr)
		}
		if got := ta.read(filepath.Join(dir, "bench_h200.md")); got != s.wantBody {
			t.Errorf("step %d: body = %q, want %q", i, got, s.wantBody)
		}
	}
	if got := ta.read(filepath.Join(dir, "bench_h200.style")); got != "error" {
		t.Errorf("style = %q, want error", got)
	}
	if code, _, _ := ta.run("plain", "annotate"); code != 0 || ta.read(filepath.Join(dir, "default.md")) != "plain" {
		t.Errorf("annotation without context = %d, want the default context", code)
	}
}

func TestSecretGet(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	secrets := filepath.Join(t.TempDir(), "secrets.json")
	if err := os.WriteFile(secrets, []byte(`{"HF_TOKEN": "hf_abc", "OTHER": "o"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ta.env[envSecrets] = secrets
	tests := []struct {
		stdin      string
		args       []string
		wantCode   int
		wantStdout string
	}{
		{"", []string{"secret", "get", "hf_token"}, 0, "hf_abc"},
		{"", []string{"secret", "get", "--format", "default", "HF_TOKEN"}, 0, "hf_abc"},
		{"", []string{"secret", "get", "MISSING"}, 1, ""},
		{"", []string{"secret", "get"}, 1, ""},
		// Real forms the runner does not use fail rather than print
		// something else.
		{"", []string{"secret", "get", "HF_TOKEN", "OTHER"}, 1, ""},
		{"", []string{"secret", "get", "--format", "env", "HF_TOKEN"}, 1, ""},
		{"", []string{"meta-data", "get", "baseline"}, 1, ""},
	}
	for _, tt := range tests {
		code, stdout, stderr := ta.run(tt.stdin, tt.args...)
		if code != tt.wantCode || stdout != tt.wantStdout {
			t.Errorf("%q = %d, %q (stderr %q); want %d, %q", tt.args, code, stdout, stderr, tt.wantCode, tt.wantStdout)
		}
	}
}

func TestRecordingAndFailures(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	steps := []struct {
		stdin    string
		args     []string
		wantCode int
	}{
		{"body", []string{"annotate", "--context", "c"}, 0},
		{"ignored", []string{"artifact", "upload", "*.none"}, 0},
		{"", []string{"secret", "get", "MISSING"}, 1},
		{"", []string{"frobnicate", "now"}, 1},
		{"", []string{"annotate", "--bogus"}, 1},
	}
	for _, s := range steps {
		if code, _, stderr := ta.run(s.stdin, s.args...); code != s.wantCode {
			t.Errorf("%q exit = %d, want %d; stderr %q", s.args, code, s.wantCode, stderr)
		}
	}
	f, err := os.Open(ta.env[envLog])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []invocation
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var inv invocation
		if err := json.Unmarshal(sc.Bytes(), &inv); err != nil {
			t.Fatal(err)
		}
		got = append(got, inv)
	}
	env := map[string]string{"BUILDKITE_JOB_ID": "job-1"}
	want := []invocation{
		{Argv: []string{"buildkite-agent", "annotate", "--context", "c"}, Stdin: "body", Env: env},
		{Argv: []string{"buildkite-agent", "artifact", "upload", "*.none"}, Stdin: "", Env: env},
		{Argv: []string{"buildkite-agent", "secret", "get", "MISSING"}, Stdin: "", Env: env},
		{Argv: []string{"buildkite-agent", "frobnicate", "now"}, Stdin: "", Env: env},
		{Argv: []string{"buildkite-agent", "annotate", "--bogus"}, Stdin: "", Env: env},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("recorded invocations diff (-got +want):\n%s", diff)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	if code, stdout, _ := ta.run("", "--version"); code != 0 || !strings.HasPrefix(stdout, "buildkite-agent version 3.") {
		t.Errorf("--version = %d, %q", code, stdout)
	}
}

func TestAbsoluteArtifactPaths(t *testing.T) {
	t.Parallel()
	ta := newTestAgent(t)
	ta.write("res/a/summary.json", "1")
	abs := filepath.ToSlash(filepath.Join(ta.dir, "res"))
	if code, _, stderr := ta.run("", "artifact", "upload", abs+"/**/*"); code != 0 {
		t.Fatalf("upload exit = %d: %s", code, stderr)
	}
	// Absolute paths are kept without their leading slash.
	want := []string{strings.TrimPrefix(abs, "/") + "/a/summary.json"}
	if diff := cmp.Diff(listFiles(t, ta.env[envArtifacts]), want); diff != "" {
		t.Errorf("uploaded files diff (-got +want):\n%s", diff)
	}
}
