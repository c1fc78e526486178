package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestE2EPerfEvalIngest: one pipeline variable (BENCHKITE_INGEST_FORMAT)
// turns the perf-eval sink on; the token comes from `buildkite-agent
// secret get INGEST_BEARER_TOKEN`; a night posts its bench row to the perf
// endpoint and its lm_eval results and samples to the eval endpoint, one
// object per POST, and the log never shows the token.
func TestE2EPerfEvalIngest(t *testing.T) {
	t.Parallel()
	const token = "perf-eval-bearer-1"
	var (
		mu    sync.Mutex
		posts []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, _ := io.ReadAll(r.Body)
		var body map[string]any
		if r.Header.Get("Authorization") != "Bearer "+token || json.Unmarshal(data, &body) != nil {
			http.Error(w, "refused", http.StatusBadRequest)
			t.Errorf("%s: refused a post: auth %q, body %.100s", r.URL.Path, r.Header.Get("Authorization"), data)
			return
		}
		what := r.URL.Path
		if k, ok := body["kind"].(string); ok {
			what += " " + k + " " + body["task"].(string)
		} else {
			what += " tp=" + jsonText(body["tp"]) + " nightly=" + jsonText(body["nightly"])
		}
		mu.Lock()
		posts = append(posts, what)
		mu.Unlock()
	}))
	defer srv.Close()
	const name = "e2e-perf-eval-ingest"
	e := newE2E(t, name, tinyRecipe(name, 1))
	e.secrets(map[string]string{"INGEST_BEARER_TOKEN": token})
	e.setenv("BENCHKITE_INGEST_FORMAT", "perf-eval", "PERF_INGEST_URL", srv.URL+"/perf", "INGEST_URL", srv.URL+"/eval", "NIGHTLY", "1")
	o := e.run()
	checkCode(t, o, 0)
	mu.Lock()
	got := strings.Join(posts, "\n")
	mu.Unlock()
	for _, want := range []string{"/perf tp=1 nightly=true", "/eval results gsm8k", "/eval samples gsm8k"} {
		if !strings.Contains(got, want) {
			t.Errorf("posts lack %q:\n%s", want, got)
		}
	}
	if !strings.Contains(o.stdout, "runner: posted 3 record(s) to "+srv.URL+"/perf and "+srv.URL+"/eval") {
		t.Errorf("log does not say what was posted:\n%s", o.stdout)
	}
	if strings.Contains(o.stdout+o.stderr, token) {
		t.Errorf("the token is in the job log")
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
