package bfcl

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/openai"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/tools"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// The driver runs the real bfcl_eval from the locked tool set's venv,
// built by the runner's own tools phase and cached between runs (as the
// end-to-end tests cache it), against the stand-in vLLM server, which
// answers BFCL's single-turn questions from BFCL's shipped answers.

var (
	venvOnce   sync.Once
	venvPython string
	venvData   string
	venvErr    error
)

// realBFCL is the venv's python and bfcl_eval's data directory.
func realBFCL(t *testing.T) (python, data string) {
	t.Helper()
	if out, err := exec.Command("python3", "-c", "import venv, ensurepip").CombinedOutput(); err != nil {
		testutil.Missing(t, "python3 with venv and ensurepip is needed to install the real bfcl-eval: %v\n%s", err, out)
	}
	venvOnce.Do(func() {
		dir := os.Getenv("BENCHKITE_TEST_TOOLS_DIR")
		if dir == "" {
			cache, err := os.UserCacheDir()
			if err != nil {
				venvErr = fmt.Errorf("no cache directory for the tool venvs: %w; set BENCHKITE_TEST_TOOLS_DIR", err)
				return
			}
			dir = filepath.Join(cache, "benchkite", "test-tools")
		}
		var log bytes.Buffer
		got, err := tools.Provision(context.Background(), proc.Exec{}, tools.Request{
			Dir: dir, Set: tools.Locked(true), Log: &log,
			Environ: append(os.Environ(), "PIP_CACHE_DIR="+filepath.Join(dir, "pip-cache")),
		})
		if err != nil {
			venvErr = fmt.Errorf("%w\n%s", err, log.String())
			return
		}
		out, err := exec.Command(got.Python, "-c", "import bfcl_eval, os; print(os.path.join(os.path.dirname(bfcl_eval.__file__), 'data'))").Output()
		if err != nil {
			venvErr = fmt.Errorf("locating bfcl_eval's data: %w", err)
			return
		}
		venvPython, venvData = got.Python, strings.TrimSpace(string(out))
	})
	if venvErr != nil {
		t.Fatalf("the locked bfcl-eval venv: %v", venvErr)
	}
	return venvPython, venvData
}

var (
	keyOnce sync.Once
	key     *openai.ToolAnswers
	keyErr  error
)

func answerKey(t *testing.T, data string) *openai.ToolAnswers {
	t.Helper()
	keyOnce.Do(func() { key, keyErr = openai.LoadBFCLAnswers(data) })
	if keyErr != nil {
		t.Fatal(keyErr)
	}
	return key
}

// chatRequest is what the test reads of each request BFCL sends.
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

// recorder keeps each chat request and its Authorization header before
// the stand-in answers it.
type recorder struct {
	next     http.Handler
	mu       sync.Mutex
	requests []chatRequest
	auth     map[string]bool
	n        atomic.Int64
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path == "/v1/chat/completions" {
		body, _ := io.ReadAll(req.Body)
		var cr chatRequest
		_ = json.Unmarshal(body, &cr)
		r.mu.Lock()
		r.requests = append(r.requests, cr)
		if r.auth == nil {
			r.auth = map[string]bool{}
		}
		r.auth[req.Header.Get("Authorization")] = true
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	r.next.ServeHTTP(w, req)
}

// harness runs plans through the embedded driver, the real bfcl_eval and
// the stand-in server.
type harness struct {
	t      *testing.T
	python string
	srv    *httptest.Server
	rec    *recorder
	model  string
	dir    string
	env    map[string]string
}

func newHarness(t *testing.T, model string, accuracy float64, faults openai.Faults, env map[string]string) *harness {
	t.Helper()
	py, data := realBFCL(t)
	rec := &recorder{next: openai.NewHandler(openai.Config{
		Model: model, Accuracy: accuracy, AutoToolChoice: true, ToolCallParser: "hermes",
		ToolAnswers: answerKey(t, data), Faults: faults,
	})}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	e := map[string]string{"PATH": os.Getenv("PATH"), "HOME": t.TempDir(), "HF_TOKEN": "hf_secret_never_passed"}
	for k, v := range env {
		e[k] = v
	}
	return &harness{t: t, python: py, srv: srv, rec: rec, model: model, dir: t.TempDir(), env: e}
}

func (h *harness) run(p Plan) (*Job, *Result, string, error) {
	h.t.Helper()
	job, err := Prepare(p, h.dir, h.python, Server{URL: h.srv.URL, Model: h.model}, envOf(h.env))
	if err != nil {
		h.t.Fatalf("Prepare() error = %v", err)
	}
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

// bfclScoreFile is the first line of BFCL's score file of leaf under root.
func bfclScoreFile(t *testing.T, root, model, leaf string) (acc float64, correct, total int) {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(root, "score", strings.ReplaceAll(model, "/", "_"), "*", "BFCL_v4_"+leaf+"_score.json"))
	if len(paths) != 1 {
		t.Fatalf("BFCL's score files of %s: %v, want one", leaf, paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	var head struct {
		Accuracy float64 `json:"accuracy"`
		Correct  int     `json:"correct_count"`
		Total    int     `json:"total_count"`
	}
	if err := json.Unmarshal(bytes.SplitN(b, []byte("\n"), 2)[0], &head); err != nil {
		t.Fatalf("%s: %v", paths[0], err)
	}
	return head.Accuracy, head.Correct, head.Total
}

func TestDriverRegistersSettingsAndScores(t *testing.T) {
	t.Parallel()
	temp := 0.25
	env := map[string]string{EnvMaximumStepLimit: "2"}
	plans := planFor(t, &workloads.BFCL{
		TestCategories:   []string{"live_parallel", "multi_turn"},
		NumThreads:       4,
		Temperature:      &temp,
		MaximumStepLimit: 5, // the env's 2 wins
		MaxTestCases:     map[string]int{"multi_turn": 10},
	}, env)
	// A model name with '/' and '_': BFCL names its folders with '_' and
	// reads them back as '/'.
	const model = "org/my_model-v1"
	h := newHarness(t, model, 0.5, openai.Faults{}, env)

	job, res, out, err := h.run(plans[0])
	if err != nil {
		t.Fatalf("Run(live_parallel) error = %v\noutput:\n%s", err, out)
	}
	acc, correct, total := bfclScoreFile(t, job.Root, model, "live_parallel")
	if correct == 0 || correct == total {
		t.Fatalf("BFCL scored %d of %d: the case needs right and wrong answers", correct, total)
	}
	// The runner reads BFCL's CSV, a percentage with two decimals.
	want := []Score{{Category: "live_parallel", Acc: float64(int(acc*10000+0.5)) / 10000, Source: "score/data_live.csv: Python Parallel AST"}}
	if diff := cmp.Diff(want, append([]Score{res.Score}, res.Sub...)); diff != "" {
		t.Errorf("live_parallel scores diff (-want +got):\n%s", diff)
	}
	if res.Total() != total || res.InferenceErrors != 0 {
		t.Errorf("live_parallel: %d entries, %d inference errors; BFCL scored %d, want no error", res.Total(), res.InferenceErrors, total)
	}
	if _, err := os.Stat(filepath.Join(job.Root, "test_case_ids_to_generate.json")); !os.IsNotExist(err) {
		t.Errorf("an unsampled run wrote test_case_ids_to_generate.json (stat: %v)", err)
	}
	h.rec.mu.Lock()
	if len(h.rec.requests) != total {
		t.Errorf("live_parallel sent %d requests, want %d", len(h.rec.requests), total)
	}
	for _, r := range h.rec.requests {
		dotted := false
		for _, tl := range r.Tools {
			dotted = dotted || strings.Contains(tl.Function.Name, ".")
		}
		if r.Model != model || r.Temperature != 0.25 || len(r.Tools) == 0 || dotted {
			t.Errorf("request = model %q, temperature %g, tools %+v; want the served model, 0.25 and tools named without dots", r.Model, r.Temperature, r.Tools)
			break
		}
	}
	if diff := cmp.Diff(map[string]bool{"Bearer " + apiKey: true}, h.rec.auth); diff != "" {
		t.Errorf("Authorization headers diff (-want +got):\n%s", diff)
	}
	h.rec.requests = nil
	h.rec.mu.Unlock()
	// A run that left no score is an error naming the files looked at.
	checkNoScore(t, job, []string{"score"},
		"bfcl live_parallel: no score: looked at score/data_live.csv",
		"and score/**/BFCL_v4_live_parallel_score.json (none found)")

	job, res, out, err = h.run(plans[1])
	if err != nil {
		t.Fatalf("Run(multi_turn) error = %v\noutput:\n%s", err, out)
	}
	// 10 split 3, 3, 2, 2 in BFCL's leaf order; the first ids in sort order
	// (0, 1, 2), not in file order.
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
	if diff := cmp.Diff(wantIDs, ids); diff != "" {
		t.Errorf("test_case_ids_to_generate.json diff (-want +got):\n%s", diff)
	}
	// The stand-in answers multi-turn questions in words: BFCL scores every
	// leaf 0, and the group is their mean, from BFCL's own CSV.
	wantScores := []Score{
		{Category: "multi_turn", Acc: 0, Source: "score/data_multi_turn.csv: Multi Turn Overall Acc"},
		{Category: "multi_turn_base", Acc: 0, Source: "score/data_multi_turn.csv: Base"},
		{Category: "multi_turn_long_context", Acc: 0, Source: "score/data_multi_turn.csv: Long Context"},
		{Category: "multi_turn_miss_func", Acc: 0, Source: "score/data_multi_turn.csv: Miss Func"},
		{Category: "multi_turn_miss_param", Acc: 0, Source: "score/data_multi_turn.csv: Miss Param"},
	}
	if diff := cmp.Diff(wantScores, append([]Score{res.Score}, res.Sub...)); diff != "" {
		t.Errorf("multi_turn scores diff (-want +got):\n%s", diff)
	}
	var names []string
	for _, tr := range res.TaskResults() {
		names = append(names, fmt.Sprintf("%s acc=%g n=%d %s", tr.Task, tr.Metrics["acc"], tr.Samples, tr.File))
	}
	wantNames := []string{
		"bfcl_multi_turn acc=0 n=10 multi_turn/score/data_multi_turn.csv",
		"bfcl_multi_turn_base acc=0 n=3 multi_turn/score/data_multi_turn.csv",
		"bfcl_multi_turn_long_context acc=0 n=3 multi_turn/score/data_multi_turn.csv",
		"bfcl_multi_turn_miss_func acc=0 n=2 multi_turn/score/data_multi_turn.csv",
		"bfcl_multi_turn_miss_param acc=0 n=2 multi_turn/score/data_multi_turn.csv",
	}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("TaskResults() diff (-want +got):\n%s", diff)
	}
	checkNoScore(t, job, []string{"score/data_multi_turn.csv", "score/org_my_model-v1/multi_turn/BFCL_v4_multi_turn_miss_func_score.json"},
		"bfcl multi_turn: sub-category multi_turn_miss_func: no score: looked at score/data_multi_turn.csv",
		"score/**/BFCL_v4_multi_turn_miss_func_score.json (none found)")
}

// checkNoScore takes files BFCL wrote away from a run, relative to its
// root, and wants ReadResult's error to say each of want.
func checkNoScore(t *testing.T, job *Job, remove []string, want ...string) {
	t.Helper()
	for _, f := range remove {
		p := filepath.Join(job.Root, f)
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("BFCL did not write %s: %v", f, err)
		}
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	res, err := ReadResult(job)
	if err == nil {
		t.Fatalf("ReadResult() = %+v without %v, want an error", res, remove)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("ReadResult() error = %v\nwant it to contain %q", err, w)
		}
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

// TestDriverServerDies: a server that dies during generate fails the run,
// saying so, rather than scoring BFCL's recorded errors as wrong answers.
func TestDriverServerDies(t *testing.T) {
	t.Parallel()
	b := &workloads.BFCL{TestCategories: []string{"simple_python"}, NumThreads: 2, MaxTestCases: map[string]int{"simple_python": 6}}
	h := newHarness(t, "m", 1, openai.Faults{DieAfterRequests: 3}, nil)
	_, res, out, err := h.run(planFor(t, b, nil)[0])
	if err == nil {
		t.Fatalf("Run() = %+v, want an error\noutput:\n%s", res, out)
	}
	for _, w := range []string{"bfcl simple_python: driver exited with 3", "the server stopped answering during generate of simple_python"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Run() error = %v\nwant it to contain %q", err, w)
		}
	}
}

// TestDriverDeadServer: a server that is gone before the run makes every
// request fail; BFCL records the errors as answers, and the run is an error.
func TestDriverDeadServer(t *testing.T) {
	t.Parallel()
	py, _ := realBFCL(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	plans := planFor(t, &workloads.BFCL{TestCategories: []string{"simple_python"}, MaxTestCases: map[string]int{"simple_python": 2}}, nil)
	job, err := Prepare(plans[0], t.TempDir(), py, Server{URL: url, Model: "m"}, envOf(map[string]string{"PATH": os.Getenv("PATH")}))
	if err != nil {
		t.Fatalf("Prepare() error = %v", err)
	}
	var out bytes.Buffer
	res, err := Run(context.Background(), job, &out)
	if err == nil || !strings.Contains(err.Error(), "the server stopped answering during generate of simple_python") {
		t.Errorf("Run() = %+v, %v; want the server named as stopped\noutput:\n%s", res, err, out.String())
	}
}
