package e2e

// An Intel XPU recipe end to end on the stand-in docker: host network,
// privileged, /dev/dri, the server started through `bash -ic` so that the
// image's .bashrc is sourced, ZE_AFFINITY_MASK passed by name, and the
// recipe's own start-up time given to vLLM.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/execlog"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

func TestE2EXPU(t *testing.T) {
	t.Parallel()
	const name = "e2e-xpu"
	recipe := strings.Replace(tinyRecipe(name, 1), "gpu: MI355X", "gpu: XPU", 1)
	recipe = strings.Replace(recipe, "  model: benchkite/tiny-model\n",
		"  model: benchkite/tiny-model\n  startup_timeout_s: 120\n  serve_args: --chat-template '$(touch pwned)'\n", 1)
	e := newE2E(t, name, recipe)
	read := e.execLog()
	// The host's /dev, with the render nodes Intel's driver makes.
	dev := filepath.Join(e.dir, "hostdev")
	if err := os.MkdirAll(filepath.Join(dev, "dri"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The image's .bashrc, which oneAPI's images use to set up the GPU
	// stack; the server must start after it ran.
	if err := os.WriteFile(filepath.Join(e.dir, ".bashrc"), []byte("export FAKE_ONEAPI_SOURCED=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.setenv("FAKE_DOCKER_DEV_ROOT", dev, "ZE_AFFINITY_MASK", "0.1",
		"FAKE_DOCKER_IMAGE_ENV", strings.Join([]string{markerEnv, execlog.Env, "FAKE_VLLM_ARGV_LOG"}, ","))
	o := e.run()
	checkCode(t, o, 0)
	s := e.summary()
	checkPhases(t, s, map[string]string{"tools": "ok", "serve": "ok", "ready": "ok", "bench": "ok", "lm_eval": "ok", "gate": "ok"})
	if s.Verdict != summary.VerdictPass {
		t.Errorf("verdict = %q, want pass", s.Verdict)
	}
	var run, serve *execlog.Entry
	entries := read()
	for i, en := range entries {
		switch progs([]execlog.Entry{en})[0] {
		case "docker run":
			run = &entries[i]
		case "vllm serve":
			serve = &entries[i]
		}
	}
	if run == nil || serve == nil {
		t.Fatalf("no docker run or vllm serve among %q", progs(entries))
	}
	argv := strings.Join(run.Argv, " ")
	for _, want := range []string{
		" --ipc=host --ulimit=nofile=65536:65536 --device=/dev/dri:/dev/dri --network=host --privileged ",
		" -e VLLM_ENGINE_READY_TIMEOUT_S=120 ",
		" -e ZE_AFFINITY_MASK --entrypoint sh vllm/vllm-openai-xpu:nightly -c ",
		" benchkite-start /tmp/" + e.containerName() + ".start bash -ic exec vllm serve \"$@\" vllm-serve benchkite/tiny-model ",
		" --chat-template $(touch pwned) --host 127.0.0.1",
	} {
		if !strings.Contains(argv, want) {
			t.Errorf("docker run argv lacks %q:\n%s", want, argv)
		}
	}
	if slices.Contains(run.Argv, "-p") {
		t.Errorf("docker run publishes a port on the host's network: %s", argv)
	}
	if !envHas(*run, "ZE_AFFINITY_MASK=0.1") {
		t.Errorf("docker run lacks ZE_AFFINITY_MASK, which it passes by name")
	}
	for _, kv := range []string{"FAKE_ONEAPI_SOURCED=1", "ZE_AFFINITY_MASK=0.1", "VLLM_ENGINE_READY_TIMEOUT_S=120"} {
		if !envHas(*serve, kv) {
			t.Errorf("vllm serve lacks %s: %q", kv, serve.Env)
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "pwned")); err == nil {
		t.Errorf("a serve argument was run by the shell")
	}
	if !slices.Contains(serve.Argv, "$(touch pwned)") {
		t.Errorf("vllm serve argv = %q, want the chat template as given", serve.Argv)
	}
	e.checkNoLeftovers()
}
