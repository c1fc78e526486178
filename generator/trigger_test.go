package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestTriggerCreatesBuild(t *testing.T) {
	t.Parallel()
	api := bkapitest.NewServer(t, "acme", "benchkite", "tok-123456")
	env := map[string]string{
		"BUILDKITE_API_TOKEN":         "tok-123456",
		"BUILDKITE_ORGANIZATION_SLUG": "acme",
		"BUILDKITE_PIPELINE_SLUG":     "benchkite",
		"BENCHKITE_API_URL":           api.URL,
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"trigger", "--workloads", "../testdata/workloads",
		"--branch", "main", "--commit", "abc1234", "--vllm-commit", "0123456789abcdef",
		"--workloads-list", "minimax_m3-mi355x, gpt_oss_120b-h200"},
		cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapEnv(env))
	if code != 0 {
		t.Fatalf("trigger exited %d: %s", code, stderr.String())
	}
	created := api.Created()
	want := []bkapitest.CreatedBuild{{
		Branch:  "main",
		Commit:  "abc1234",
		Message: "benchkite: WORKLOADS=minimax_m3-mi355x,gpt_oss_120b-h200 VLLM_COMMIT=0123456789abcdef",
		Env:     map[string]string{"VLLM_COMMIT": "0123456789abcdef", "WORKLOADS": "minimax_m3-mi355x,gpt_oss_120b-h200"},
	}}
	if diff := cmp.Diff(want, created, cmpopts.IgnoreFields(bkapitest.CreatedBuild{}, "Raw")); diff != "" {
		t.Errorf("created builds diff (-want +got):\n%s", diff)
	}
	if got := strings.TrimSpace(stdout.String()); !strings.HasPrefix(got, "http") {
		t.Errorf("stdout = %q, want the build URL", got)
	}
}

func TestTriggerRefusesBeforeCallingAPI(t *testing.T) {
	t.Parallel()
	api := bkapitest.NewServer(t, "acme", "benchkite", "tok-123456")
	base := map[string]string{
		"BUILDKITE_API_TOKEN": "tok-123456", "BUILDKITE_ORGANIZATION_SLUG": "acme",
		"BUILDKITE_PIPELINE_SLUG": "benchkite", "BENCHKITE_API_URL": api.URL,
	}
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		wantErr  string
	}{
		{"unknown recipe", []string{"--workloads-list", "minimax_m3-mi355"}, nil, 1, "close: minimax_m3-mi355x"},
		{"bad commit", []string{"--vllm-commit", "not-hex!"}, nil, 2, "7 to 40 lower-case hex"},
		{"bad image", []string{"--vllm-image", "Bad Image"}, nil, 2, "not a valid image reference"},
		{"invalid recipes", []string{"--workloads", "testdata/invalid/workloads"}, nil, 1, "recipes are invalid"},
		{"no token", nil, map[string]string{"BUILDKITE_API_TOKEN": ""}, 1, "BUILDKITE_API_TOKEN is not set"},
		{"no pipeline", nil, map[string]string{"BUILDKITE_PIPELINE_SLUG": ""}, 2, "--pipeline"},
	}
	for _, tt := range tests {
		env := map[string]string{}
		for k, v := range base {
			env[k] = v
		}
		for k, v := range tt.env {
			env[k] = v
		}
		args := append([]string{"trigger"}, tt.args...)
		if !strings.Contains(strings.Join(args, " "), "--workloads ") {
			args = append(args, "--workloads", "../testdata/workloads")
		}
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapEnv(env))
		if code != tt.wantCode || !strings.Contains(stderr.String(), tt.wantErr) || stdout.Len() != 0 {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit %d and %q, no stdout", tt.name, code, stderr.String(), stdout.String(), tt.wantCode, tt.wantErr)
		}
	}
	if got := api.Created(); len(got) != 0 {
		t.Errorf("refused triggers created builds: %v", got)
	}
}

func TestTriggerUnauthorized(t *testing.T) {
	t.Parallel()
	api := bkapitest.NewServer(t, "acme", "benchkite", "right-token")
	env := map[string]string{
		"BUILDKITE_API_TOKEN": "wrong-token-value", "BUILDKITE_ORGANIZATION_SLUG": "acme",
		"BUILDKITE_PIPELINE_SLUG": "benchkite", "BENCHKITE_API_URL": api.URL,
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"trigger", "--workloads", "../testdata/workloads", "--branch", "main"}, cliutil.Streams{Stdout: &stdout, Stderr: &stderr}, mapEnv(env))
	if code != 1 || stdout.Len() != 0 {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, stdout.String())
	}
	if strings.Contains(stderr.String(), "wrong-token-value") {
		t.Errorf("the token leaked into the error: %s", stderr.String())
	}
}
