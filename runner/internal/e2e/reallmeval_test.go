package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/hfhub"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/openai"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/tools"
)

// realToolsBound covers a first install of the locked tool set from PyPI
// and real lm_eval's start-up (it indexes every task it ships) on a busy
// machine. A reused venv takes seconds.
const realToolsBound = 40 * time.Minute

// toolsCacheDir is where the tests' tool venvs live between runs: one per
// lock hash, reused while the locks hold (BENCHKITE_TEST_TOOLS_DIR, else
// the user's cache directory).
func toolsCacheDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("BENCHKITE_TEST_TOOLS_DIR"); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("no cache directory for the tool venvs: %v; set BENCHKITE_TEST_TOOLS_DIR", err)
	}
	return filepath.Join(d, "benchkite", "test-tools")
}

// networkEnv are the machine's settings for reaching PyPI (proxies, CA
// bundles, a mirror), as an agent's environment would carry them; the
// e2e jobs otherwise start from an empty environment.
func networkEnv() []string {
	var kv []string
	for _, name := range []string{
		"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
		"SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
		"PIP_CERT", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_TRUSTED_HOST", "PIP_DEFAULT_TIMEOUT",
	} {
		if v, ok := os.LookupEnv(name); ok {
			kv = append(kv, name, v)
		}
	}
	return kv
}

// requireVenvPython fails in CI, and skips loudly elsewhere, without a
// python3 that can create a venv.
func requireVenvPython(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("python3", "-c", "import venv, ensurepip").CombinedOutput(); err != nil {
		testutil.Missing(t, "python3 with venv and ensurepip is needed to install the real tools: %v\n%s", err, out)
	}
}

// TestE2ERealLMEval runs the shrunk seed recipe with the runner's own
// tools phase (a venv from the checked-in lock, pip with hashes) and the
// real lm_eval CLI, whose unchanged gsm8k task loads its data from a
// loopback stand-in of the Hub and asks the stand-in server, which gets a
// known share of the questions wrong. The score, results and samples are
// lm_eval's own.
func TestE2ERealLMEval(t *testing.T) {
	t.Parallel()
	requireLinux(t)
	requireVenvPython(t)
	const (
		nTest    = 40
		accuracy = 0.75
	)
	repo, rows := hfhub.GSM8K(10, nTest)
	hub, err := hfhub.Start(repo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })

	e := newE2E(t, seedName, smallSeedRecipe(t))
	e.setenv("BENCHKITE_TOOLS", "venv", "BENCHKITE_TOOLS_DIR", toolsCacheDir(t),
		"HF_ENDPOINT", hub.URL(), "HF_HOME", filepath.Join(e.dir, "hf"),
		"HF_HUB_DISABLE_TELEMETRY", "1",
		"FAKE_VLLM_ACCURACY", "0.75")
	e.setenv(networkEnv()...)
	// pip's downloads are kept beside the venvs: a changed lock fetches
	// only the wheels it changed.
	e.setenv("PIP_CACHE_DIR", filepath.Join(toolsCacheDir(t), "pip-cache"))
	o := e.start("--health-timeout", "5m").waitWithin(realToolsBound)
	s := e.summary()
	if s.Tools == nil || s.Tools.Mode != "venv" || s.Tools.Lock != tools.Locked(false).Key() {
		t.Fatalf("summary tools = %+v, want the venv of lock %s\nstdout:\n%s", s.Tools, tools.Locked(false).Key(), o.stdout)
	}
	t.Logf("tools phase: %s, reused %t, %.1f s", s.Tools.Lock, s.Tools.Reused, s.Tools.DurationSeconds)
	if v := s.Tools.Versions["lm-eval"]; v != tools.LMEval.Version {
		t.Errorf("lm-eval %q in the venv, want %s", v, tools.LMEval.Version)
	}
	if len(s.Accuracy) != 1 || s.Accuracy[0].Status != summary.StatusOK {
		t.Fatalf("summary accuracy = %+v, want gsm8k scored\nstdout:\n%s", s.Accuracy, lastLines(o.stdout, 80))
	}

	// What the server answers right, question by question, decides the
	// score: lm_eval's own filters and metric must agree with it.
	q := regexp.MustCompile(`What is \d+ \+ \d+\?`)
	right := 0
	for _, r := range rows {
		if openai.IsAnsweredCorrectly(q.FindString(r.Question), accuracy) {
			right++
		}
	}
	want := float64(right) / nTest
	if right == 0 || right == nTest {
		t.Fatalf("the generated set has %d of %d right at %v: the case needs both", right, nTest, accuracy)
	}
	for _, m := range []string{"exact_match,flexible-extract", "exact_match,strict-match"} {
		if got := s.Accuracy[0].Metrics[m]; got != want {
			t.Errorf("gsm8k %s = %v, want %v (%d of %d)", m, got, want, right, nTest)
		}
	}

	// The files are lm_eval's: its version in the results, one sample per
	// question, and the data came from the stand-in Hub.
	var res struct {
		Version  string         `json:"lm_eval_version"`
		NSamples map[string]any `json:"n-samples"`
	}
	data, err := os.ReadFile(filepath.Join(e.dir, "results", seedName, s.Accuracy[0].File))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	if res.Version != tools.LMEval.Version {
		t.Errorf("results file lm_eval_version = %q, want %s", res.Version, tools.LMEval.Version)
	}
	samples, _ := filepath.Glob(filepath.Join(filepath.Dir(filepath.Join(e.dir, "results", seedName, s.Accuracy[0].File)), "samples_gsm8k_*.jsonl"))
	if len(samples) != 1 {
		t.Fatalf("samples files = %v, want one", samples)
	}
	lines, err := os.ReadFile(samples[0])
	if err != nil {
		t.Fatal(err)
	}
	// One line per question and filter (strict-match, flexible-extract).
	docs := map[string]map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		var sample struct {
			DocID  int    `json:"doc_id"`
			Filter string `json:"filter"`
		}
		if err := json.Unmarshal([]byte(line), &sample); err != nil {
			t.Fatalf("%s: %v", samples[0], err)
		}
		if docs[sample.Filter] == nil {
			docs[sample.Filter] = map[int]bool{}
		}
		docs[sample.Filter][sample.DocID] = true
	}
	for _, f := range []string{"strict-match", "flexible-extract"} {
		if n := len(docs[f]); n != nTest {
			t.Errorf("%s has %d questions under filter %s, want %d", samples[0], n, f, nTest)
		}
	}
	if got := hub.Served()["openai/gsm8k/main/test.jsonl"]; got == 0 {
		t.Errorf("lm_eval never downloaded the test split from the stand-in Hub: %v", hub.Served())
	}
	e.checkNoLeftovers()
}

// TestE2ELMEvalFails runs the real lm_eval where the Hub has no gsm8k: its
// task fails to load its data and lm_eval exits with a traceback. The
// phase fails with lm_eval's own message, and the bench is kept.
func TestE2ELMEvalFails(t *testing.T) {
	t.Parallel()
	requireLinux(t)
	requireVenvPython(t)
	hub, err := hfhub.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	const name = "e2e-lmeval-fails"
	// Without a tokenizer: the locked set has no transformers, which
	// lm_eval's local-completions imports to tokenize.
	recipe := strings.Replace(tinyRecipe(name, 1), "lm_eval:\n  tasks:",
		"lm_eval:\n  model_args:\n    tokenized_requests: false\n    tokenizer_backend: null\n  tasks:", 1)
	e := newE2E(t, name, recipe)
	dir := toolsCacheDir(t)
	e.setenv("BENCHKITE_TOOLS", "venv", "BENCHKITE_TOOLS_DIR", dir,
		"PIP_CACHE_DIR", filepath.Join(dir, "pip-cache"),
		"HF_ENDPOINT", hub.URL(), "HF_HOME", filepath.Join(e.dir, "hf"), "HF_HUB_DISABLE_TELEMETRY", "1")
	e.setenv(networkEnv()...)
	o := e.start("--health-timeout", "5m").waitWithin(realToolsBound)
	checkCode(t, o, 1)

	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "ok", "bench": "ok", "lm_eval": "failed", "gate": "ok"})
	if len(s.Bench) != 1 || s.Bench[0].Status != summary.StatusOK || s.Bench[0].OutputThroughput <= 0 {
		t.Errorf("summary bench = %+v, want the bench results kept", s.Bench)
	}
	if len(s.Accuracy) != 1 || s.Accuracy[0].Status != summary.StatusFailed || !strings.Contains(s.Accuracy[0].Error, "lm_eval exited with code 1") {
		t.Fatalf("summary accuracy = %+v, want gsm8k failed with code 1\nstdout:\n%s", s.Accuracy, lastLines(o.stdout, 60))
	}
	logTail, _ := os.ReadFile(e.results("lm_eval-gsm8k.log"))
	if len(hub.Unknown()) == 0 {
		t.Errorf("lm_eval asked the stand-in Hub for nothing it lacks; its log ends:\n%s", lastLines(string(logTail), 30))
	}
	t.Logf("lm_eval's failure, as the runner reports it: %s", s.Accuracy[0].Error)
	e.checkUploaded("summary.json", "bench/bench-short.json", "lm_eval-gsm8k.log")
	e.checkAnnotation("error", "**lm_eval** failed: ", "| short | 2 |", "| ok |")
	checkLastLines(t, o, tailLines, "+++ :x: e2e-lmeval-fails: error", "lm_eval failed: gsm8k: ", "/lm_eval exited with code 1")
	e.checkNoLeftovers()
}
