package bfcl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// python3 returns the interpreter, skipping loudly without one, except in
// CI, where its absence is a failure.
func python3(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		testutil.Missing(t, "python3 is needed to run the BFCL driver against the stand-in bfcl_eval: %v", err)
	}
	return p
}

// fakeOpenAI is an OpenAI-style chat server that answers tool calls: the
// call is right (first tool, x = the question's index) unless the index is
// 1 modulo 3, and multi-turn questions never stop calling tools.
type fakeOpenAI struct {
	model string
	// dieAfter makes the server drop every connection after that many
	// completions; 0 never.
	dieAfter int64

	mu       sync.Mutex
	requests []chatRequest
	auth     map[string]bool
	n        atomic.Int64
}

type chatRequest struct {
	Model       string           `json:"model"`
	Temperature float64          `json:"temperature"`
	Messages    []map[string]any `json:"messages"`
	Tools       []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.dieAfter > 0 && f.n.Load() >= f.dieAfter {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		http.Error(w, "gone", http.StatusBadGateway)
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/models":
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"}]}`, f.model)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		f.n.Add(1)
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.requests = append(f.requests, req)
		if f.auth == nil {
			f.auth = map[string]bool{}
		}
		f.auth[r.Header.Get("Authorization")] = true
		f.mu.Unlock()
		if req.Model != f.model {
			http.Error(w, `{"error":"model not found"}`, http.StatusNotFound)
			return
		}
		first, _ := req.Messages[0]["content"].(string)
		idx, _ := strconv.Atoi(strings.TrimPrefix(first, "question "))
		msg := map[string]any{"role": "assistant", "content": "no tool for this"}
		if len(req.Tools) > 0 {
			name := req.Tools[0].Function.Name
			if idx%3 == 1 {
				name = "wrong_tool"
			}
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": fmt.Sprintf("call_%d", f.n.Load()), "type": "function",
				"function": map[string]any{"name": name, "arguments": fmt.Sprintf(`{"x": %d}`, idx)},
			}}}
		}
		json.NewEncoder(w).Encode(map[string]any{
			"id": "c", "object": "chat.completion", "model": f.model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
			"usage":   map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	default:
		http.NotFound(w, r)
	}
}

// harness runs plans through the embedded driver and the stand-in.
type harness struct {
	t      *testing.T
	python string
	srv    *httptest.Server
	fake   *fakeOpenAI
	dir    string
	env    map[string]string
}

func newHarness(t *testing.T, fake *fakeOpenAI, env map[string]string) *harness {
	t.Helper()
	py := python3(t)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	testdata, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{"PATH": os.Getenv("PATH"), "HOME": t.TempDir(), "PYTHONPATH": testdata, "HF_TOKEN": "hf_secret_never_passed"}
	for k, v := range env {
		e[k] = v
	}
	return &harness{t: t, python: py, srv: srv, fake: fake, dir: t.TempDir(), env: e}
}

// run prepares and runs one plan; knobs are the stand-in's test settings,
// given to the driver's environment only.
func (h *harness) run(p Plan, knobs ...string) (*Job, *Result, string, error) {
	h.t.Helper()
	job, err := Prepare(p, h.dir, h.python, Server{URL: h.srv.URL, Model: h.fake.model}, envOf(h.env))
	if err != nil {
		h.t.Fatalf("Prepare() error = %v", err)
	}
	job.Env = append(job.Env, knobs...)
	var out bytes.Buffer
	res, err := Run(context.Background(), job, &out)
	return job, res, out.String(), err
}

func planFor(t *testing.T, b *workloads.BFCL, env map[string]string) []Plan {
	t.Helper()
	plans, err := Plans(b, envOf(env))
	if err != nil {
		t.Fatalf("Plans() error = %v", err)
	}
	return plans
}

func TestDriverRegistersSettingsAndScores(t *testing.T) {
	t.Parallel()
	temp := 0.25
	env := map[string]string{EnvMaximumStepLimit: "2"}
	plans := planFor(t, &workloads.BFCL{
		TestCategories:   []string{"simple_python", "multi_turn"},
		NumThreads:       4,
		Temperature:      &temp,
		MaximumStepLimit: 5, // the env's 2 wins
		MaxTestCases:     map[string]int{"multi_turn": 10},
	}, env)
	fake := &fakeOpenAI{model: "org/my_model-v1"}
	h := newHarness(t, fake, env)

	job, res, out, err := h.run(plans[0])
	if err != nil {
		t.Fatalf("Run(simple_python) error = %v\noutput:\n%s", err, out)
	}
	// 12 entries, wrong where the index is 1 mod 3 (1, 4, 7, 10).
	want := []Score{{Category: "simple_python", Acc: 0.6667, Source: "score/data_non_live.csv: Python Simple AST"}}
	if diff := cmp.Diff(append([]Score{res.Score}, res.Sub...), want); diff != "" {
		t.Errorf("simple_python scores diff (-got +want):\n%s", diff)
	}
	if res.Total() != 12 || res.InferenceErrors != 0 {
		t.Errorf("simple_python: %d entries, %d inference errors; want 12, 0", res.Total(), res.InferenceErrors)
	}
	if _, err := os.Stat(filepath.Join(job.Root, "test_case_ids_to_generate.json")); !os.IsNotExist(err) {
		t.Errorf("an unsampled run wrote test_case_ids_to_generate.json (stat: %v)", err)
	}

	fake.mu.Lock()
	if len(fake.requests) != 12 {
		t.Errorf("simple_python sent %d requests, want 12", len(fake.requests))
	}
	for _, r := range fake.requests {
		if r.Model != "org/my_model-v1" || r.Temperature != 0.25 || len(r.Tools) != 1 || !strings.HasPrefix(r.Tools[0].Function.Name, "pkg_tool_") {
			t.Errorf("request = model %q, temperature %g, tools %+v; want the served model, 0.25 and one tool named without dots", r.Model, r.Temperature, r.Tools)
			break
		}
	}
	if diff := cmp.Diff(fake.auth, map[string]bool{"Bearer " + apiKey: true}); diff != "" {
		t.Errorf("Authorization headers diff (-got +want):\n%s", diff)
	}
	fake.requests = nil
	fake.mu.Unlock()

	job, res, out, err = h.run(plans[1])
	if err != nil {
		t.Fatalf("Run(multi_turn) error = %v\noutput:\n%s", err, out)
	}
	// 10 split 3, 3, 2, 2 in BFCL's leaf order; the first ids in sort order
	// (0, 1, 2), not in file order (0, 1, 10).
	b, err := os.ReadFile(filepath.Join(job.Root, "test_case_ids_to_generate.json"))
	if err != nil {
		t.Fatalf("reading the id file: %v", err)
	}
	var ids map[string][]string
	if err := json.Unmarshal(b, &ids); err != nil {
		t.Fatalf("id file: %v", err)
	}
	wantIDs := map[string][]string{
		"multi_turn_base":         {"multi_turn_base_0", "multi_turn_base_1", "multi_turn_base_2"},
		"multi_turn_long_context": {"multi_turn_long_context_0", "multi_turn_long_context_1", "multi_turn_long_context_2"},
		"multi_turn_miss_func":    {"multi_turn_miss_func_0", "multi_turn_miss_func_1"},
		"multi_turn_miss_param":   {"multi_turn_miss_param_0", "multi_turn_miss_param_1"},
	}
	if diff := cmp.Diff(ids, wantIDs); diff != "" {
		t.Errorf("test_case_ids_to_generate.json diff (-got +want):\n%s", diff)
	}
	// Leaves of 3 score 2/3, of 2 score 1/2; the group is their mean.
	want = []Score{
		{Category: "multi_turn", Acc: 0.5833, Source: "score/data_multi_turn.csv: Multi Turn Overall Acc"},
		{Category: "multi_turn_base", Acc: 0.6667, Source: "score/data_multi_turn.csv: Base"},
		{Category: "multi_turn_long_context", Acc: 0.6667, Source: "score/data_multi_turn.csv: Long Context"},
		{Category: "multi_turn_miss_func", Acc: 0.5, Source: "score/data_multi_turn.csv: Miss Func"},
		{Category: "multi_turn_miss_param", Acc: 0.5, Source: "score/data_multi_turn.csv: Miss Param"},
	}
	if diff := cmp.Diff(append([]Score{res.Score}, res.Sub...), want); diff != "" {
		t.Errorf("multi_turn scores diff (-got +want):\n%s", diff)
	}
	// The model never stops calling tools, so each entry runs into the
	// step limit: limit + 1 requests.
	fake.mu.Lock()
	if got := len(fake.requests); got != 10*3 {
		t.Errorf("multi_turn sent %d requests, want 10 entries × (step limit 2 + 1)", got)
	}
	fake.mu.Unlock()

	gotTasks := res.TaskResults()
	var names []string
	for _, tr := range gotTasks {
		names = append(names, fmt.Sprintf("%s acc=%g n=%d %s", tr.Task, tr.Metrics["acc"], tr.Samples, tr.File))
	}
	wantNames := []string{
		"bfcl_multi_turn acc=0.5833 n=10 multi_turn/score/data_multi_turn.csv",
		"bfcl_multi_turn_base acc=0.6667 n=3 multi_turn/score/data_multi_turn.csv",
		"bfcl_multi_turn_long_context acc=0.6667 n=3 multi_turn/score/data_multi_turn.csv",
		"bfcl_multi_turn_miss_func acc=0.5 n=2 multi_turn/score/data_multi_turn.csv",
		"bfcl_multi_turn_miss_param acc=0.5 n=2 multi_turn/score/data_multi_turn.csv",
	}
	if diff := cmp.Diff(names, wantNames); diff != "" {
		t.Errorf("TaskResults() diff (-got +want):\n%s", diff)
	}
}

func TestDriverEnvHoldsNoSecrets(t *testing.T) {
	t.Parallel()
	plans := planFor(t, &workloads.BFCL{TestCategories: []string{"multiple"}}, nil)
	job, err := Prepare(plans[0], t.TempDir(), "/venv/bin/python", Server{URL: "http://127.0.0.1:8000", Model: "m"},
		envOf(map[string]string{"PATH": "/bin", "HF_TOKEN": "hf_x", "BUILDKITE_AGENT_ACCESS_TOKEN": "bk_x", "OPENAI_API_KEY": "sk_x"}))
	if err != nil {
		t.Fatalf("Prepare() error = %v", err)
	}
	want := []string{"PATH=/bin", "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"}
	if diff := cmp.Diff(job.Env, want); diff != "" {
		t.Errorf("Prepare().Env diff (-got +want):\n%s", diff)
	}
	if job.Argv[0] != "/venv/bin/python" || filepath.Base(job.Argv[1]) != DriverFile || filepath.Base(job.Argv[2]) != ConfigFile {
		t.Errorf("Prepare().Argv = %q", job.Argv)
	}
	var cfg driverConfig
	b, _ := os.ReadFile(job.Argv[2])
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	if cfg.BaseURL != "http://127.0.0.1:8000/v1" || cfg.LocalServerEndpoint != "127.0.0.1" || cfg.LocalServerPort != 8000 || cfg.Quotas != nil {
		t.Errorf("config = %+v", cfg)
	}
}

func TestDriverFailures(t *testing.T) {
	t.Parallel()
	b := &workloads.BFCL{TestCategories: []string{"simple_python", "multi_turn"}, NumThreads: 2, MaxTestCases: map[string]int{"multi_turn": 8}}
	tests := []struct {
		name     string
		category int
		dieAfter int64
		knobs    []string
		want     []string
	}{
		{
			name:  "bfcl raises in generate",
			knobs: []string{"BFCL_STANDIN_RAISE=generate"},
			want:  []string{"bfcl simple_python: driver exited with 1", "stand-in generate was told to raise"},
		},
		{
			name:     "bfcl raises in evaluate",
			category: 1,
			knobs:    []string{"BFCL_STANDIN_RAISE=evaluate"},
			want:     []string{"bfcl multi_turn: driver exited with 1", "stand-in evaluate was told to raise"},
		},
		{
			name:  "a category with no score",
			knobs: []string{"BFCL_STANDIN_NO_SCORE=simple_python"},
			want: []string{
				"bfcl simple_python: no score: looked at score/data_non_live.csv",
				"and score/**/BFCL_v4_simple_python_score.json (none found)",
			},
		},
		{
			name:     "a sub-category with no score",
			category: 1,
			knobs:    []string{"BFCL_STANDIN_NO_SCORE=multi_turn_miss_func"},
			want: []string{
				"bfcl multi_turn: sub-category multi_turn_miss_func: no score: looked at score/data_multi_turn.csv (column \"Miss Func\" is N/A for model \"m\")",
				"score/**/BFCL_v4_multi_turn_miss_func_score.json (none found)",
			},
		},
		{
			name:     "the server dies during generate",
			dieAfter: 5,
			want:     []string{"bfcl simple_python: driver exited with 3", "the server stopped answering during generate of simple_python"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := &fakeOpenAI{model: "m", dieAfter: tt.dieAfter}
			h := newHarness(t, fake, nil)
			_, res, out, err := h.run(planFor(t, b, nil)[tt.category], tt.knobs...)
			if err == nil {
				t.Fatalf("Run() = %+v, want an error\noutput:\n%s", res, out)
			}
			t.Logf("Run() error = %v", err)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Run() error = %v\nwant it to contain %q", err, w)
				}
			}
		})
	}
}

// TestDriverDeadServer: a server that is gone before the run makes every
// request fail; BFCL records the errors as answers, and the run is an error.
func TestDriverDeadServer(t *testing.T) {
	t.Parallel()
	py := python3(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	testdata, _ := filepath.Abs("testdata")
	plans := planFor(t, &workloads.BFCL{TestCategories: []string{"multiple"}}, nil)
	job, err := Prepare(plans[0], t.TempDir(), py, Server{URL: url, Model: "m"}, envOf(map[string]string{"PATH": os.Getenv("PATH"), "PYTHONPATH": testdata}))
	if err != nil {
		t.Fatalf("Prepare() error = %v", err)
	}
	var out bytes.Buffer
	res, err := Run(context.Background(), job, &out)
	if err == nil || !strings.Contains(err.Error(), "the server stopped answering during generate of multiple") {
		t.Errorf("Run() = %+v, %v; want the server named as stopped\noutput:\n%s", res, err, out.String())
	}
}

// TestStandInIsStrict checks the stand-in refuses calls the real commands
// refuse, so the driver passing against it means something.
func TestStandInIsStrict(t *testing.T) {
	t.Parallel()
	py := python3(t)
	testdata, _ := filepath.Abs("testdata")
	tests := []struct{ name, call, want string }{
		{"unknown keyword", "evaluate(model=['m'], test_category=['multiple'], result_dir=None, score_dir=None, partial_eval=False, partial=True)", "unexpected keyword argument 'partial'"},
		{"left at a default", "evaluate(model=['m'], test_category=['multiple'])", "left at their Typer option defaults: result_dir, score_dir, partial_eval"},
	}
	for _, tt := range tests {
		cmd := exec.Command(py, "-c", "from bfcl_eval.__main__ import evaluate\n"+tt.call)
		cmd.Env = []string{"PYTHONPATH=" + testdata, "BFCL_PROJECT_ROOT=" + t.TempDir(), "PYTHONDONTWRITEBYTECODE=1", "PATH=" + os.Getenv("PATH")}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tt.want) {
			t.Errorf("%s: %s = %v\n%s\nwant a failure saying %q", tt.name, tt.call, err, out, tt.want)
		}
	}
}
