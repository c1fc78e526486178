package buildkite

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/runner/internal/proc"
)

// call is what the recording runner saw of one command.
type call struct {
	Argv  []string
	Env   []string
	Stdin string
	Spare bool
}

// recorder runs nothing: it records each command, writes stdout and
// stderr to its streams and exits with err.
type recorder struct {
	calls          []call
	stdout, stderr string
	err            error
}

func (r *recorder) Run(_ context.Context, s proc.Spec) error {
	c := call{Argv: s.Argv, Env: s.Env, Spare: s.Spare}
	if s.Stdin != nil {
		b, _ := io.ReadAll(s.Stdin)
		c.Stdin = string(b)
	}
	r.calls = append(r.calls, c)
	if s.Stdout != nil {
		io.WriteString(s.Stdout, r.stdout)
	}
	if s.Stderr != nil {
		io.WriteString(s.Stderr, r.stderr)
	}
	return r.err
}

func (r *recorder) Start(context.Context, proc.Spec) (proc.Process, error) {
	return nil, errors.New("not started: the agent's commands run to their end")
}

// Every agent command goes out as the agent's documented command line,
// with the agent's environment, and is logged where the caller asked.
func TestAgentCommands(t *testing.T) {
	t.Parallel()
	env := []string{"BUILDKITE_AGENT_ACCESS_TOKEN=t", "BUILDKITE_JOB_ID=j"}
	for _, tt := range []struct {
		name string
		do   func(a Agent) error
		want call
		log  string
	}{
		{"annotate", func(a Agent) error { return a.Annotate(context.Background(), "ctx", "warning", "", "body") },
			call{Argv: []string{"buildkite-agent", "annotate", "--context", "ctx", "--style", "warning"}, Env: env, Stdin: "body"},
			"$ buildkite-agent annotate --context ctx --style warning\nout"},
		{"annotate with priority", func(a Agent) error { return a.Annotate(context.Background(), "r", "error", "10", "b") },
			call{Argv: []string{"buildkite-agent", "annotate", "--context", "r", "--style", "error", "--priority", "10"}, Env: env, Stdin: "b"},
			"$ buildkite-agent annotate --context r --style error --priority 10\nout"},
		{"upload", func(a Agent) error { return a.Upload(context.Background(), "results/r/**/*") },
			call{Argv: []string{"buildkite-agent", "artifact", "upload", "results/r/**/*"}, Env: env},
			"$ buildkite-agent artifact upload 'results/r/**/*'\nout"},
		{"download from a step", func(a Agent) error {
			return a.Download(context.Background(), "results/r/summary.json", ".", "recipe:r")
		},
			call{Argv: []string{"buildkite-agent", "artifact", "download", "results/r/summary.json", ".", "--step", "recipe:r"}, Env: env},
			"$ buildkite-agent artifact download results/r/summary.json . --step recipe:r\nout"},
		{"download from the build", func(a Agent) error { return a.Download(context.Background(), "results/*/summary.json", ".", "") },
			call{Argv: []string{"buildkite-agent", "artifact", "download", "results/*/summary.json", "."}, Env: env},
			"$ buildkite-agent artifact download 'results/*/summary.json' .\nout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := &recorder{stdout: "out"}
			var log strings.Builder
			if err := tt.do(Agent{Procs: r, Env: env, Log: &log}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]call{tt.want}, r.calls); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			if log.String() != tt.log {
				t.Errorf("log = %q, want %q", log.String(), tt.log)
			}
		})
	}
}

// A secret's value is returned, never logged; a failure nobody logs
// says the agent's last word; a step's state is the agent's answer.
func TestAgentSecretAndOutput(t *testing.T) {
	t.Parallel()
	var log strings.Builder
	r := &recorder{stdout: "s3cret", stderr: "warning\n"}
	a := Agent{Procs: r, Log: &log, Spare: true}
	v, err := a.Secret(context.Background(), "TOKEN")
	if err != nil || v != "s3cret" || log.Len() != 0 {
		t.Errorf("Secret = %q, %v; log %q; want the value and nothing logged", v, err, log.String())
	}
	if want := []string{"buildkite-agent", "secret", "get", "TOKEN"}; !cmp.Equal(r.calls[0].Argv, want) || !r.calls[0].Spare {
		t.Errorf("secret command %+v, want %q, spare as its agent", r.calls[0], want)
	}
	r = &recorder{stderr: "downloading\nfatal: No artifacts found\n", err: &proc.ExitError{Name: "buildkite-agent", Code: 1}}
	err = Agent{Procs: r}.Download(context.Background(), "x", ".", "history")
	if err == nil || !strings.HasSuffix(err.Error(), ": fatal: No artifacts found") {
		t.Errorf("Download error = %v, want the agent's last line", err)
	}
	r = &recorder{stdout: "running\n"}
	state, err := Agent{Procs: r}.StepState(context.Background(), "history")
	if want := []string{"buildkite-agent", "step", "get", "state", "--step", "history"}; err != nil || state != "running" || !cmp.Equal(r.calls[0].Argv, want) {
		t.Errorf("StepState = %q, %v by %q; want running by %q", state, err, r.calls[0].Argv, want)
	}
}

// The API client takes the token from its variable, else the agent's
// secret, and the pipeline from the job's slugs.
func TestDoorAPI(t *testing.T) {
	t.Parallel()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization")+" "+r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"number": 7, "jobs": []}`)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"BUILDKITE_ORGANIZATION_SLUG": "org", "BUILDKITE_PIPELINE_SLUG": "nightly"}
	for _, tt := range []struct {
		name, envToken, secret, want string
		secretCalls                  int
	}{
		{name: "from the variable", envToken: "env-token", secret: "unused", want: "Bearer env-token"},
		{name: "from the secret", secret: "secret-token\n", want: "Bearer secret-token", secretCalls: 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			r := &recorder{stdout: tt.secret}
			d := Door{Agent: Agent{Procs: r}, Getenv: func(k string) string {
				if k == "BK_TOKEN" {
					return tt.envToken
				}
				return env[k]
			}}
			c, err := d.API(context.Background(), srv.URL+"/", "BK_TOKEN", "BENCHKITE_API_TOKEN")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.GetBuildAllTries(context.Background(), 7); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !strings.HasPrefix(got[0], tt.want+" /v2/organizations/org/pipelines/nightly/builds/7") || len(r.calls) != tt.secretCalls {
				t.Errorf("requests %q, %d secret call(s); want %q to org/nightly and %d", got, len(r.calls), tt.want, tt.secretCalls)
			}
		})
	}
}
