package jobflags

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// mapGetenv is a getenv over a fixed map; nil reads as an empty env.
func mapGetenv(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

func TestParseConfig(t *testing.T) {
	t.Parallel()
	// Only the fields flags and env set; the gate and ingest settings have
	// their own flags and defaults.
	type parsed struct {
		RecipePath    string
		ResultsDir    string
		Port          int
		HealthTimeout time.Duration
		BaseURL       string
		BenchOnly     bool
		Grace         time.Duration
	}
	// HealthTimeout 0: the recipe's vllm.startup_timeout_s decides.
	defaults := parsed{RecipePath: "r.yaml", Port: 8000, HealthTimeout: 0, Grace: 10 * time.Second}
	with := func(f func(*parsed)) parsed { p := defaults; f(&p); return p }
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want parsed
	}{
		{"defaults", []string{"r.yaml"}, nil, defaults},
		{
			name: "env fallbacks",
			args: []string{"r.yaml"},
			env: map[string]string{"BENCHKITE_PORT": " 9001 ", "BENCHKITE_HEALTH_TIMEOUT": "90m", "BENCH_ONLY": "1",
				"BENCHKITE_RESULTS": "out/r", "BENCHKITE_GRACE": "30s", "BENCHKITE_BASE_URL": "http://127.0.0.1:7000"},
			// Attaching takes the flag: the variable is ignored.
			want: with(func(p *parsed) {
				p.Port, p.HealthTimeout, p.BenchOnly, p.ResultsDir, p.Grace = 9001, 90*time.Minute, true, "out/r", 30*time.Second
			}),
		},
		{"BENCH_ONLY spelled true", []string{"r.yaml"}, map[string]string{"BENCH_ONLY": "TRUE"}, with(func(p *parsed) { p.BenchOnly = true })},
		{"BENCH_ONLY off", []string{"r.yaml"}, map[string]string{"BENCH_ONLY": "0"}, defaults},
		{
			name: "flags win over env",
			args: []string{"--port", "9002", "--health-timeout", "5m", "--results", "flag/r", "r.yaml"},
			env:  map[string]string{"BENCHKITE_PORT": "9001", "BENCHKITE_HEALTH_TIMEOUT": "90m", "BENCHKITE_RESULTS": "out/r"},
			want: with(func(p *parsed) { p.Port, p.HealthTimeout, p.ResultsDir = 9002, 5*time.Minute, "flag/r" }),
		},
		{
			name: "flags after the recipe path",
			args: []string{"r.yaml", "--port", "9003", "--bench-only", "-grace=0s"},
			want: with(func(p *parsed) { p.Port, p.BenchOnly, p.Grace = 9003, true, 0 }),
		},
		{
			name: "flags on both sides",
			args: []string{"--bench-only=false", "r.yaml", "--port=9004"},
			env:  map[string]string{"BENCH_ONLY": "yes"},
			want: with(func(p *parsed) { p.Port = 9004 }),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stderr strings.Builder
			c, err := Parse("run", tt.args, &stderr, mapGetenv(tt.env))
			if err != nil {
				t.Fatalf("Parse(%q) error = %v; stderr:\n%s", tt.args, err, stderr.String())
			}
			got := parsed{c.Recipe, c.Job.ResultsDir, c.Job.Port, c.Job.HealthTimeout, c.Job.BaseURL, c.Job.BenchOnly, c.Job.Grace}
			if diff := cmp.Diff(got, tt.want); diff != "" {
				t.Errorf("Parse(%q) diff (-got +want):\n%s", tt.args, diff)
			}
		})
	}
}

func TestParseConfigBaselines(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"r.yaml"}, want: ""},
		{args: []string{"r.yaml"}, env: map[string]string{"BENCHKITE_BASELINES": "from-env.json"}, want: "from-env.json"},
		{args: []string{"--baselines", "h.json", "r.yaml"}, env: map[string]string{"BENCHKITE_BASELINES": "from-env.json"}, want: "h.json"},
	} {
		c, err := Parse("run", tt.args, io.Discard, mapGetenv(tt.env))
		if err != nil {
			t.Fatal(err)
		}
		if c.Job.Baselines != tt.want {
			t.Errorf("Parse(%q, env %v).Baselines = %q, want %q", tt.args, tt.env, c.Job.Baselines, tt.want)
		}
	}
	// The API flags moved to `runner history`: a GPU job has no token.
	if _, err := Parse("run", []string{"r.yaml", "--api-token-env", "MY_TOKEN"}, io.Discard, mapGetenv(nil)); err == nil {
		t.Errorf("Parse(--api-token-env) = nil error, want the flag unknown to run")
	}
}
