package childenv

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// jobEnv is a GPU job's environment as a Buildkite agent hands it over.
var jobEnv = []string{
	"PATH=/usr/local/bin:/usr/bin",
	"HOME=/root",
	"USER=root",
	"LANG=C.UTF-8",
	"LC_ALL=C.UTF-8",
	"TZ=UTC",
	"TMPDIR=/tmp",
	"TERM=dumb",
	"SHELL=/bin/bash",
	"CUDA_VISIBLE_DEVICES=0,1",
	"ROCR_VISIBLE_DEVICES=0",
	"NCCL_CUMEM_HOST_ENABLE=0",
	"VLLM_USAGE_SOURCE=ci-test",
	"HF_HOME=/mnt/shared/hf_cache",
	"HF_TOKEN=hf_secret",
	"HUGGING_FACE_HUB_TOKEN=hf_secret2",
	"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
	"OMP_NUM_THREADS=8",
	"LD_LIBRARY_PATH=/usr/local/nvidia/lib64",
	"LD_PRELOAD=/evil.so",
	"PYTHONPATH=/opt/extra",
	"PYTHONHOME=/opt/py",
	"PIP_INDEX_URL=https://mirror/simple",
	"PIP_TARGET=/elsewhere",
	"BFCL_MAX_TEST_CASES=5",
	"BUILDKITE_AGENT_ACCESS_TOKEN=bkagent",
	"BUILDKITE_API_TOKEN=bkapi",
	"BUILDKITE_JOB_ID=job-1",
	"BUILDKITE_S3_SECRET_ACCESS_KEY=s3secret",
	"BENCHKITE_INGEST_TOKEN=ingest",
	"BENCHKITE_TOOLS=path",
	"AWS_REGION=us-west-2",
	"AWS_SECRET_ACCESS_KEY=awssecret",
	"DOCKER_HOST=unix:///run/docker.sock",
	"VLLM_API_KEY=serverkey",
	"CUDA_LICENSE_KEY=k",
	"MY_TOKEN=t",
	"GITHUB_TOKEN=gh",
	"no_equals_sign",
	"=nameless",
}

func TestBuild(t *testing.T) {
	t.Parallel()
	basics := []string{
		"HOME=/root", "LANG=C.UTF-8", "LC_ALL=C.UTF-8", "PATH=/usr/local/bin:/usr/bin",
		"TERM=dumb", "TMPDIR=/tmp", "TZ=UTC", "USER=root",
	}
	gpu := []string{
		"CUDA_VISIBLE_DEVICES=0,1", "HF_HOME=/mnt/shared/hf_cache",
		"HF_TOKEN=hf_secret", "HUGGING_FACE_HUB_TOKEN=hf_secret2",
		"LD_LIBRARY_PATH=/usr/local/nvidia/lib64", "NCCL_CUMEM_HOST_ENABLE=0",
		"OMP_NUM_THREADS=8", "PYTHONPATH=/opt/extra",
		"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True", "ROCR_VISIBLE_DEVICES=0",
		"VLLM_USAGE_SOURCE=ci-test",
	}
	hfTok := []string{"HF_TOKEN=hf_secret", "HUGGING_FACE_HUB_TOKEN=hf_secret2"}
	tests := []struct {
		role Role
		opts Options
		want []string
	}{
		{role: Install, want: slices.Concat(basics, []string{"PIP_INDEX_URL=https://mirror/simple"})},
		{role: Server, want: slices.Concat(basics, gpu)},
		{
			role: Server,
			opts: Options{
				Recipe: []Var{{"VLLM_USAGE_SOURCE", "recipe"}, {"VLLM_ATTENTION_BACKEND", "FLASHINFER"}},
				Runner: []Var{{"VLLM_ENGINE_READY_TIMEOUT_S", "3600"}, {"VLLM_USAGE_SOURCE", "runner"}},
			},
			want: slices.Concat(basics, gpu, []string{"VLLM_ATTENTION_BACKEND=FLASHINFER", "VLLM_ENGINE_READY_TIMEOUT_S=3600"}, []string{"VLLM_USAGE_SOURCE=runner"}),
		},
		{role: Bench, want: slices.Concat(basics, gpu)},
		{role: LMEval, want: slices.Concat(basics, []string{"HF_HOME=/mnt/shared/hf_cache"}, hfTok)},
		{
			role: LMEval,
			opts: Options{Runner: []Var{{"PATH", "/venv/bin:/usr/bin"}, {"VIRTUAL_ENV", "/venv"}}},
			want: slices.Concat(basics, []string{"HF_HOME=/mnt/shared/hf_cache"}, hfTok, []string{"PATH=/venv/bin:/usr/bin", "VIRTUAL_ENV=/venv"}),
		},
		{
			role: BFCL,
			opts: Options{Runner: []Var{{"OPENAI_API_KEY", "EMPTY"}, {"OPENAI_BASE_URL", "http://127.0.0.1:8000/v1"}}},
			want: slices.Concat(basics, []string{"BFCL_MAX_TEST_CASES=5", "HF_HOME=/mnt/shared/hf_cache", "OPENAI_API_KEY=EMPTY", "OPENAI_BASE_URL=http://127.0.0.1:8000/v1"}),
		},
		{
			role: Agent,
			want: slices.Concat(basics, []string{
				"AWS_REGION=us-west-2", "AWS_SECRET_ACCESS_KEY=awssecret",
				"BUILDKITE_AGENT_ACCESS_TOKEN=bkagent", "BUILDKITE_JOB_ID=job-1",
				"BUILDKITE_S3_SECRET_ACCESS_KEY=s3secret",
			}),
		},
		{role: Docker, want: slices.Concat(basics, []string{"DOCKER_HOST=unix:///run/docker.sock"})},
		{role: DockerServer, want: slices.Concat(basics, []string{"DOCKER_HOST=unix:///run/docker.sock"}, hfTok)},
		{role: DockerBench, want: slices.Concat(basics, []string{"DOCKER_HOST=unix:///run/docker.sock"}, hfTok)},
		{
			role: Agent,
			opts: Options{Deny: []string{"BUILDKITE_S3_SECRET_ACCESS_KEY"}},
			want: slices.Concat(basics, []string{
				"AWS_REGION=us-west-2", "AWS_SECRET_ACCESS_KEY=awssecret",
				"BUILDKITE_AGENT_ACCESS_TOKEN=bkagent", "BUILDKITE_JOB_ID=job-1",
			}),
		},
	}
	for _, tt := range tests {
		o := tt.opts
		o.Environ = jobEnv
		got, err := Build(tt.role, o)
		if err != nil {
			t.Errorf("Build(%v) error = %v", tt.role, err)
			continue
		}
		if diff := cmp.Diff(got, sorted(tt.want)); diff != "" {
			t.Errorf("Build(%v, %+v) diff (-got +want):\n%s", tt.role, tt.opts, diff)
		}
	}
}

// TestBuildNoTokenLeaks checks every role against the tokens of the job:
// whatever the role, the runner's tokens never pass, and the agent's only
// to buildkite-agent.
func TestBuildNoTokenLeaks(t *testing.T) {
	t.Parallel()
	hfRoles := []Role{Server, Bench, LMEval, DockerServer, DockerBench}
	for _, r := range allRoles() {
		env, err := Build(r, Options{Environ: jobEnv})
		if err != nil {
			t.Fatalf("Build(%v) error = %v", r, err)
		}
		got := map[string]bool{}
		for _, kv := range env {
			name, _, _ := strings.Cut(kv, "=")
			got[name] = true
		}
		for _, name := range []string{"BUILDKITE_API_TOKEN", "BENCHKITE_INGEST_TOKEN", "MY_TOKEN", "GITHUB_TOKEN", "VLLM_API_KEY", "CUDA_LICENSE_KEY", "LD_PRELOAD", "PYTHONHOME", "SHELL", "BENCHKITE_TOOLS", "PIP_TARGET"} {
			if got[name] {
				t.Errorf("Build(%v) passes %s", r, name)
			}
		}
		if want := r == Agent; got["BUILDKITE_AGENT_ACCESS_TOKEN"] != want {
			t.Errorf("Build(%v) has BUILDKITE_AGENT_ACCESS_TOKEN = %t, want %t", r, got["BUILDKITE_AGENT_ACCESS_TOKEN"], want)
		}
		if want := slices.Contains(hfRoles, r); got["HF_TOKEN"] != want || got["HUGGING_FACE_HUB_TOKEN"] != want {
			t.Errorf("Build(%v) has HF tokens = %t/%t, want %t", r, got["HF_TOKEN"], got["HUGGING_FACE_HUB_TOKEN"], want)
		}
	}
}

func TestBuildRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		role Role
		opts Options
		want []string // substrings of the error
	}{
		{"recipe PATH", Server, Options{Recipe: []Var{{"PATH", "/evil"}}}, []string{"PATH", "which programs run"}},
		{"recipe LD_PRELOAD", Server, Options{Recipe: []Var{{"LD_PRELOAD", "x.so"}}}, []string{"LD_PRELOAD", "libraries"}},
		{"recipe LD_LIBRARY_PATH", Server, Options{Recipe: []Var{{"LD_LIBRARY_PATH", "/x"}}}, []string{"LD_LIBRARY_PATH"}},
		{"recipe PYTHONPATH", Server, Options{Recipe: []Var{{"PYTHONPATH", "/x"}}}, []string{"PYTHONPATH", "Python code"}},
		{"recipe PYTHONHOME", Server, Options{Recipe: []Var{{"PYTHONHOME", "/x"}}}, []string{"PYTHONHOME"}},
		{"recipe agent token", Server, Options{Recipe: []Var{{"BUILDKITE_AGENT_ACCESS_TOKEN", "x"}}}, []string{"BUILDKITE_AGENT_ACCESS_TOKEN", "Buildkite or runner"}},
		{"recipe bad name", Server, Options{Recipe: []Var{{"A=B", "x"}}}, []string{`"A=B"`, "not a variable name"}},
		{"two recipe errors", Server, Options{Recipe: []Var{{"PATH", "/a"}, {"PYTHONPATH", "/b"}}}, []string{"PATH:", "PYTHONPATH:"}},
		{"runner ingest token", LMEval, Options{Runner: []Var{{"BENCHKITE_INGEST_TOKEN", "x"}}}, []string{"BENCHKITE_INGEST_TOKEN", "lmeval"}},
		{"runner agent token to server", Server, Options{Runner: []Var{{"BUILDKITE_AGENT_ACCESS_TOKEN", "x"}}}, []string{"BUILDKITE_AGENT_ACCESS_TOKEN", "server"}},
		{"runner denied name", Agent, Options{Deny: []string{"MY_API"}, Runner: []Var{{"MY_API", "x"}}}, []string{"MY_API"}},
		{"unknown role", Role(99), Options{}, []string{"unknown role Role(99)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.opts.Environ = jobEnv
			got, err := Build(tt.role, tt.opts)
			if err == nil {
				t.Fatalf("Build(%v, %+v) = %v, want an error", tt.role, tt.opts, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Build(%v, %+v) error = %q, want it to contain %q", tt.role, tt.opts, err, w)
				}
			}
			if tt.role == Role(99) {
				return
			}
			if !errors.Is(err, ErrForbidden) {
				t.Errorf("Build(%v, %+v) error = %v, want errors.Is ErrForbidden", tt.role, tt.opts, err)
			}
		})
	}
}

func TestCheckRecipe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ok   bool
	}{
		{"VLLM_ATTENTION_BACKEND", true},
		{"HF_HOME", true},
		{"NCCL_DEBUG", true},
		{"path", true}, // names are case-sensitive: this is not PATH
		{"PATH", false},
		{"LD_PRELOAD", false},
		{"LD_LIBRARY_PATH", false},
		{"LD_AUDIT", false},
		{"PYTHONPATH", false},
		{"PYTHONHOME", false},
		{"PYTHONUSERBASE", false},
		{"BUILDKITE_API_TOKEN", false},
		{"BENCHKITE_TOOLS", false},
		{"", false},
	}
	for _, tt := range tests {
		err := CheckRecipe(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("CheckRecipe(%q) = %v, want ok %t", tt.name, err, tt.ok)
		}
	}
}

func TestBuildLoopbackNoProxy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		role    Role
		environ []string
		want    []string
	}{
		{
			name:    "no proxy set: nothing added",
			role:    LMEval,
			environ: []string{"NO_PROXY=corp"},
			want:    []string{"NO_PROXY=corp"},
		},
		{
			name:    "proxy: loopback added to both spellings",
			role:    Bench,
			environ: []string{"HTTPS_PROXY=http://proxy:3128", "NO_PROXY=corp,localhost"},
			want:    []string{"HTTPS_PROXY=http://proxy:3128", "NO_PROXY=corp,localhost,127.0.0.1", "no_proxy=127.0.0.1,localhost"},
		},
		{
			name:    "wildcard kept",
			role:    BFCL,
			environ: []string{"http_proxy=http://proxy:3128", "no_proxy=*"},
			want:    []string{"NO_PROXY=127.0.0.1,localhost", "http_proxy=http://proxy:3128", "no_proxy=*"},
		},
		{
			name:    "server talks to no local server",
			role:    Server,
			environ: []string{"HTTPS_PROXY=http://proxy:3128"},
			want:    []string{"HTTPS_PROXY=http://proxy:3128"},
		},
	}
	for _, tt := range tests {
		got, err := Build(tt.role, Options{Environ: tt.environ})
		if err != nil {
			t.Fatalf("%s: Build error = %v", tt.name, err)
		}
		if diff := cmp.Diff(got, sorted(tt.want)); diff != "" {
			t.Errorf("%s: Build(%v, %q) diff (-got +want):\n%s", tt.name, tt.role, tt.environ, diff)
		}
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	env := []string{
		"HF_TOKEN=hf_secret",
		"HF_TOKEN_EMPTY_TOKEN=",
		"BUILDKITE_AGENT_ACCESS_TOKEN=bk",
		"OPENAI_API_KEY=EMPTY",
		"CUSTOM=visible",
		"MY_SECRET_NAME_LIST=x",
		"PIP_INDEX_URL=https://user:p%40ss@mirror.example/simple",
		"PIP_EXTRA_INDEX_URL=https://a:b@one/simple https://two/simple",
		"HTTPS_PROXY=http://proxyuser:pw@proxy:3128",
		"NO_PROXY=127.0.0.1,localhost",
		"GIT_URL=git@github.com:org/repo",
	}
	want := []string{
		"HF_TOKEN=***",
		"HF_TOKEN_EMPTY_TOKEN=",
		"BUILDKITE_AGENT_ACCESS_TOKEN=***",
		"OPENAI_API_KEY=***",
		"CUSTOM=***",
		"MY_SECRET_NAME_LIST=x",
		"PIP_INDEX_URL=https://***@mirror.example/simple",
		"PIP_EXTRA_INDEX_URL=https://***@one/simple https://two/simple",
		"HTTPS_PROXY=http://***@proxy:3128",
		"NO_PROXY=127.0.0.1,localhost",
		"GIT_URL=git@github.com:org/repo",
	}
	got := Render(env, "CUSTOM")
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Render(%q) diff (-got +want):\n%s", env, diff)
	}
}

func TestRoleString(t *testing.T) {
	t.Parallel()
	var got []string
	for _, r := range allRoles() {
		got = append(got, r.String())
	}
	want := []string{"install", "server", "bench", "lmeval", "bfcl", "agent", "docker", "docker-server", "docker-bench"}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("Role.String() diff (-got +want):\n%s", diff)
	}
}

// sorted sorts want lists, keeping the last entry per name (as Build
// does for overrides).
func sorted(env []string) []string {
	m := map[string]string{}
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		m[name] = value
	}
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

func TestPass(t *testing.T) {
	t.Parallel()
	environ := []string{"FAKE_KNOB=1", "MY_API_KEY=s3cret", "PATH=/bin"}
	got, err := Build(LMEval, Options{Environ: environ, Pass: []string{"FAKE_KNOB", "MY_API_KEY"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, []string{"FAKE_KNOB=1", "PATH=/bin"}); diff != "" {
		t.Errorf("Build(LMEval, Pass) diff (-got +want):\n%s", diff)
	}
	for _, name := range []string{"MY_API_KEY", "HF_TOKEN", "BUILDKITE_AGENT_ACCESS_TOKEN", "BUILDKITE_API_TOKEN"} {
		if err := CheckPass(name); err == nil {
			t.Errorf("CheckPass(%q) = nil, want an error", name)
		}
	}
	if err := CheckPass("FAKE_KNOB"); err != nil {
		t.Errorf("CheckPass(FAKE_KNOB) = %v, want nil", err)
	}
}

// allRoles lists every role, in declaration order.
func allRoles() []Role {
	return []Role{Install, Server, Bench, LMEval, BFCL, Agent, Docker, DockerServer, DockerBench}
}
