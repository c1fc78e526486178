package e2e

// aiperf end to end, natively, against the stand-in server: a zipped
// sweep whose points become summary entries, gated by assertions that
// pass and one that cannot.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/execlog"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

func TestE2EAIPerf(t *testing.T) {
	t.Parallel()
	const name = "e2e-aiperf"
	recipe := tinyRecipe(name, 1) + `aiperf:
  configs:
    - name: zip
      args:
        endpoint-type: chat
        streaming: true
        extra-inputs: ["ignore_eos:true", "max_tokens:8"]
        sweep-type: zip
        concurrency: "2,3"
        request-count: "6,9"
        output-tokens-mean: 8
      assertions:
        request_throughput: {min: 0.001}
        time_to_first_token_p99_ms: {max: 60000}
    - name: strict
      args: {concurrency: 1, request-count: 2}
      assertions:
        request_throughput: {min: 1000000000}
`
	e := newE2E(t, name, recipe)
	read := e.execLog()
	o := e.run()
	checkCode(t, o, 1)
	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "ok", "bench": "ok", "aiperf": "ok", "lm_eval": "ok", "gate": "failed"})
	var points []string
	for _, b := range s.Bench {
		if b.Backend != "aiperf" {
			continue
		}
		points = append(points, b.Name)
		if b.Status != summary.StatusOK || b.RequestThroughput <= 0 || b.Metrics["request_latency_p99_ms"] <= 0 {
			t.Errorf("%s = %+v, want measured", b.Name, b)
		}
	}
	want := []string{"aiperf-zip-concurrency_2__requests_6", "aiperf-zip-concurrency_3__requests_9", "aiperf-strict"}
	if !slices.Equal(points, want) {
		t.Errorf("aiperf entries %q, want %q", points, want)
	}
	for _, b := range s.Bench {
		if b.Name == want[0] && (b.Concurrency != 2 || b.NumPrompts != 6 || b.Metrics["time_to_first_token_p99_ms"] <= 0) {
			t.Errorf("%s: concurrency %d, %d requests, TTFT p99 %g; want 2, 6 and a streamed TTFT", b.Name, b.Concurrency, b.NumPrompts, b.Metrics["time_to_first_token_p99_ms"])
		}
	}
	verdicts := map[string]string{}
	for _, g := range s.Gates {
		verdicts[g.Subject+" "+g.Metric] = g.Verdict
	}
	for k, v := range map[string]string{
		want[0] + " request_throughput": "pass", want[1] + " time_to_first_token_p99_ms": "pass", "aiperf-strict request_throughput": "fail",
	} {
		if verdicts[k] != v {
			t.Errorf("gate %s = %q, want %s (gates: %v)", k, verdicts[k], v, verdicts)
		}
	}
	var argv []string
	for _, en := range read() {
		if progs([]execlog.Entry{en})[0] == "aiperf profile" {
			argv = en.Argv
			break
		}
	}
	got := strings.Join(argv, " ")
	wantArgv := "aiperf profile --model benchkite/tiny-model --tokenizer benchkite/tiny-model --url http://127.0.0.1:"
	if !strings.Contains(got, wantArgv) || !strings.Contains(got, "/results/e2e-aiperf/aiperf-zip --endpoint-type chat --streaming --extra-inputs ignore_eos:true --extra-inputs max_tokens:8 --sweep-type zip --concurrency 2,3 --request-count 6,9") {
		t.Errorf("aiperf argv = %s", got)
	}
	body, _ := e.annotation()
	if !strings.Contains(body, "aiperf-strict") {
		t.Errorf("the annotation does not show aiperf's gate:\n%s", body)
	}
}

// On a docker host aiperf runs in the server's container and writes its
// artifacts into the results folder mounted for it: the stand-in docker
// refuses a command naming a job path no -v mounts, so an unmounted
// artifact folder fails here as it silently would on a real host. The
// image's Python is asked for aiperf first (it has it: nothing installed).
func TestE2EDockerAIPerf(t *testing.T) {
	t.Parallel()
	const name = "e2e-docker-aiperf"
	e, _ := newDockerE2E(t, name, 1)
	writeFile(t, filepath.Join(e.dir, "recipe.yaml"), dockerRecipe(name, 1)+`aiperf:
  configs:
    - name: sw
      args: {concurrency: "2,3", request-count: 4}
      assertions:
        request_throughput: {min: 0.001}
`)
	o := e.run("--health-timeout", "5m")
	checkCode(t, o, 0)
	s := e.summary()
	var points []string
	for _, b := range s.Bench {
		if b.Backend != "aiperf" {
			continue
		}
		points = append(points, b.Name+" "+b.Status)
	}
	if want := []string{"aiperf-sw-concurrency_2 ok", "aiperf-sw-concurrency_3 ok"}; !slices.Equal(points, want) {
		t.Errorf("aiperf entries %q, want %q\n%s", points, want, o.stdout)
	}
	for _, p := range []string{"concurrency_2", "concurrency_3"} {
		if !fileExists(e.results("aiperf-sw", p, "profile_export_aiperf.json")) {
			t.Errorf("no export of %s on the host", p)
		}
	}
	ctr := e.containerName()
	if !strings.Contains(o.stdout, "runner: aiperf "+standInAIPerf+" imports in docker exec "+ctr+" python3; nothing installed") {
		t.Errorf("the log does not show the aiperf step:\n%s", o.stdout)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
