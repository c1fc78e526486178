package job

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/proc"
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

// Before the server starts, the benchkite containers on the host that no
// live job uses are removed and named, whatever their recipe: a stopped
// one, one of a job whose runner has ended, one left by an earlier run of
// this job. A running one of a live job (another build on the host) is
// left alone, and so is one whose job cannot be checked.
func TestRemoveStaleContainers(t *testing.T) {
	t.Parallel()
	res := workloadstest.Resolve(t, dockerRecipe, nil)
	self := proc.Identity()
	if self == "" {
		t.Skip("no /proc: runner identities cannot be checked")
	}
	ns, _, _ := strings.Cut(self, "/")
	gone := ns + "/999999999/1" // above any pid_max
	const format = `{{.Id}}|{{.Name}}|{{.State.Running}}|{{index .Config.Labels "benchkite.job"}}|{{index .Config.Labels "benchkite.recipe"}}|{{index .Config.Labels "benchkite.runner"}}`
	tests := []struct {
		name     string
		ps       string
		inspect  string
		wantRm   []string
		wantLogs []string
	}{
		{
			name:    "live, dead, stopped, ours, unknown",
			ps:      "a1\nb2\nc3\nd4\ne5\n",
			inspect: "a1|/benchkite-x-job-2|true|job-2|x|" + self + "\nb2|/benchkite-other-job-3|true|job-3|other|" + gone + "\nc3|/benchkite-y-job-4|false|job-4|y|" + self + "\nd4|/benchkite-gpt-job-1|true|job-1|gpt|" + self + "\ne5|/old|true|job-5|z|<no value>\n",
			wantRm:  []string{"b2", "c3", "d4"},
			wantLogs: []string{
				"runner: container benchkite-x-job-2 (recipe x, job job-2) is running for a job that may be live; left alone",
				"runner: removing container benchkite-other-job-3 (recipe other, job job-3): its job's runner has ended",
				"runner: removing container benchkite-y-job-4 (recipe y, job job-4): not running",
				"runner: removing container benchkite-gpt-job-1 (recipe gpt, job job-1): left by an earlier run of this job",
				"runner: container old (recipe z, job job-5) is running for a job that may be live; left alone",
			},
		},
		{name: "none left", ps: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := proctest.New(t)
			fake.Expect("docker", "ps", "-aq", "--no-trunc", "--filter", "label=benchkite.job").Stdout(tt.ps)
			if tt.ps != "" {
				fake.Expect("docker", "inspect", "-f", format).Stdout(tt.inspect)
			}
			if len(tt.wantRm) > 0 {
				fake.Expect(append([]string{"docker", "rm", "-f"}, tt.wantRm...)...)
			}
			var log strings.Builder
			j := &Job{res: res, procs: fake, log: &log, getenv: mapGetenv(map[string]string{"BUILDKITE_JOB_ID": "job-1"})}
			j.removeStaleContainers(context.Background())
			for _, w := range tt.wantLogs {
				if !strings.Contains(log.String(), w+"\n") {
					t.Errorf("log lacks %q:\n%s", w, log.String())
				}
			}
			if tt.wantLogs == nil && log.Len() > 0 {
				t.Errorf("log = %q, want nothing", log.String())
			}
			if last := fake.Argvs()[len(fake.Argvs())-1]; len(tt.wantRm) > 0 && !slices.Equal(last, append([]string{"docker", "rm", "-f"}, tt.wantRm...)) {
				t.Errorf("last command = %q, want rm of %q", last, tt.wantRm)
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
