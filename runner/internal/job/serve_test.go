package job

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/proc/proctest"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
	"github.com/benchkite/benchkite/workloads/workloadstest"
)

// A secret in the recipe's env reaches the container by name; its value
// is in docker's environment, never on the logged command line.
func TestServeSpecsDockerSecretsByName(t *testing.T) {
	t.Parallel()
	res := workloadstest.Resolve(t, dockerRecipe, nil)
	res.Env = append(res.Env, workloads.EnvVar{Name: "MY_API_KEY", Value: "sk-live-123"}, workloads.EnvVar{Name: "VLLM_LOGGING_LEVEL", Value: "DEBUG"})
	j := New(Config{Port: 8000}, res, Deps{Getenv: mapGetenv(map[string]string{"BUILDKITE_JOB_ID": "j"}), Environ: []string{"PATH=/bin"}})
	specs, err := j.serveSpecs()
	if err != nil {
		t.Fatal(err)
	}
	run := specs[0]
	argv := strings.Join(run.Argv, " ")
	if strings.Contains(argv, "sk-live-123") || !strings.Contains(argv, "-e MY_API_KEY ") {
		t.Errorf("docker run argv = %q, want -e MY_API_KEY without its value", argv)
	}
	if !strings.Contains(argv, "-e VLLM_LOGGING_LEVEL=DEBUG") {
		t.Errorf("docker run argv = %q, want the plain variable with its value", argv)
	}
	if !slices.Contains(run.Env, "MY_API_KEY=sk-live-123") {
		t.Errorf("docker run env = %q, want the secret's value for docker to copy", run.Env)
	}
	if slices.Contains(specs[1].Env, "MY_API_KEY=sk-live-123") {
		t.Errorf("docker logs env = %q, want no secret: it does not need one", specs[1].Env)
	}
}

// Containers of this recipe left by a killed job are removed before the
// server starts; a host without any runs no rm.
func TestRemoveStaleContainers(t *testing.T) {
	t.Parallel()
	res := workloadstest.Resolve(t, dockerRecipe, nil)
	tests := []struct {
		name    string
		ps      string
		wantRm  bool
		wantLog string
	}{
		{"two left", "3f2a9c\nb71e04\n", true, "runner: removing 2 stale container(s) of gpt_oss_120b-h200 left by an earlier job: 3f2a9c b71e04"},
		{"none left", "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := proctest.New(t)
			fake.Expect("docker", "ps", "-aq", "--filter", "label=benchkite.recipe=gpt_oss_120b-h200").Stdout(tt.ps)
			if tt.wantRm {
				fake.Expect("docker", "rm", "-f", "3f2a9c", "b71e04")
			}
			var log strings.Builder
			j := &Job{res: res, procs: fake, log: &log}
			j.removeStaleContainers(context.Background())
			if !strings.Contains(log.String(), tt.wantLog) || (tt.wantLog == "" && log.Len() > 0) {
				t.Errorf("log = %q, want %q", log.String(), tt.wantLog)
			}
			if got := len(fake.Argvs()); got != 1+map[bool]int{true: 1}[tt.wantRm] {
				t.Errorf("commands run = %q", fake.Argvs())
			}
		})
	}
}

// summary.json is readable by anyone with the build: a secret-looking
// recipe env value is masked in it, as `runner plan` masks it.
func TestSummaryMasksSecretEnv(t *testing.T) {
	t.Parallel()
	res := workloadstest.Resolve(t, dockerRecipe, nil)
	res.Env = append(res.Env, workloads.EnvVar{Name: "MY_API_KEY", Value: "sk-live-123"}, workloads.EnvVar{Name: "VLLM_LOGGING_LEVEL", Value: "DEBUG"})
	j := New(Config{Port: 8000}, res, Deps{Getenv: mapGetenv(nil), Environ: []string{"PATH=/bin"}})
	var b strings.Builder
	if err := summary.Encode(&b, j.sum); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "sk-live-123") || !strings.Contains(b.String(), "MY_API_KEY=***") || !strings.Contains(b.String(), "VLLM_LOGGING_LEVEL=DEBUG") {
		t.Errorf("summary.json:\n%s\nwant MY_API_KEY masked, the plain variable kept", b.String())
	}
}
