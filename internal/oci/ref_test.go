package oci

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseRef(t *testing.T) {
	t.Parallel()
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		in      string
		want    Ref
		name    string
		wantErr string
	}{
		{in: "vllm/vllm-openai:nightly", want: Ref{Registry: DockerHub, Repository: "vllm/vllm-openai", Tag: "nightly"}, name: "index.docker.io/vllm/vllm-openai:nightly"},
		{in: "docker.io/vllm/vllm-openai:nightly", want: Ref{Registry: DockerHub, Repository: "vllm/vllm-openai", Tag: "nightly"}, name: "index.docker.io/vllm/vllm-openai:nightly"},
		{in: "registry-1.docker.io/vllm/vllm-openai:nightly", want: Ref{Registry: DockerHub, Repository: "vllm/vllm-openai", Tag: "nightly"}, name: "index.docker.io/vllm/vllm-openai:nightly"},
		{in: "ubuntu", want: Ref{Registry: DockerHub, Repository: "library/ubuntu", Tag: "latest"}, name: "index.docker.io/library/ubuntu:latest"},
		{in: "public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:abc", want: Ref{Registry: "public.ecr.aws", Repository: "q9t5s3a7/vllm-ci-postmerge-repo", Tag: "abc"}, name: "public.ecr.aws/q9t5s3a7/vllm-ci-postmerge-repo:abc"},
		{in: "localhost:5000/a/b@" + d, want: Ref{Registry: "localhost:5000", Repository: "a/b", Digest: d}, name: "localhost:5000/a/b@" + d},
		{in: "127.0.0.1:5000/a:t@" + d, want: Ref{Registry: "127.0.0.1:5000", Repository: "a", Tag: "t", Digest: d}, name: "127.0.0.1:5000/a@" + d},
		{in: "[::1]:5000/a:t", want: Ref{Registry: "[::1]:5000", Repository: "a", Tag: "t"}, name: "[::1]:5000/a:t"},
		{in: "Not A Ref!", wantErr: "not a valid path component"},
		{in: "vllm/VLLM:nightly", wantErr: `"VLLM" is not a valid path component`},
		{in: "vllm/vllm:-x", wantErr: `tag "-x" is not a valid tag`},
		{in: "vllm/vllm@sha256:abc", wantErr: "is not sha256:<64 hex digits>"},
		{in: "host:5000/", wantErr: "no repository"},
		{in: "bad_host.io:x/a", wantErr: "is not a host name"},
	}
	for _, tt := range tests {
		got, err := ParseRef(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseRef(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseRef(%q) error = %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(got, tt.want); diff != "" {
			t.Errorf("ParseRef(%q) diff (-got +want):\n%s", tt.in, diff)
		}
		if got.Name() != tt.name {
			t.Errorf("ParseRef(%q).Name() = %q, want %q", tt.in, got.Name(), tt.name)
		}
	}
}

// Only this machine's loopback is spoken to in plain HTTP.
func TestScheme(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]string{
		"localhost:5000": "http", "127.0.0.1:41234": "http", "[::1]:5000": "http", "reg.localhost": "http",
		DockerHub: "https", "10.0.0.5:5000": "https", "registry.example": "https", "localhost.example.com": "https",
	} {
		if got := (Ref{Registry: host}).scheme(); got != want {
			t.Errorf("scheme of %s = %s, want %s", host, got, want)
		}
	}
}
