package workloads

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
)

// TestServeFlagsGenerator runs the generator over a stand-in vLLM source
// tree that holds each way vLLM defines a serve flag (see the comments in
// vllmflags/testdata/src).
func TestServeFlagsGenerator(t *testing.T) {
	t.Parallel()
	py, err := exec.LookPath("python3")
	if err != nil {
		testutil.Missing(t, "python3 is needed to run the vLLM flag table generator: %v", err)
	}
	cmd := exec.Command(py, filepath.Join("vllmflags", "gen_serve_flags.py"), filepath.Join("vllmflags", "testdata", "src"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("gen_serve_flags.py: %v\n%s", err, stderr.String())
	}
	testutil.Golden(t, filepath.Join("vllmflags", "testdata", "src.flags"), out)
	if want := "class CacheConfig is defined in vllm/config/model.py, vllm/models/other.py; using the first"; !strings.Contains(stderr.String(), want) {
		t.Errorf("gen_serve_flags.py stderr = %q, want it to say %q", stderr.String(), want)
	}
	flags, version := parseFlagTable(string(out))
	if version != "9.9.9" || len(flags) == 0 {
		t.Errorf("parseFlagTable(generated) = %d flags, version %q; want some, 9.9.9", len(flags), version)
	}
}

// TestServeFlagTable checks the shipped table: a version, flags only, and
// the flags the runner and the shipped recipes rely on.
func TestServeFlagTable(t *testing.T) {
	t.Parallel()
	if !regexp.MustCompile(`^\d+\.\d+\.\d+`).MatchString(VLLMFlagsVersion) {
		t.Errorf("VLLMFlagsVersion = %q, want a release", VLLMFlagsVersion)
	}
	long := regexp.MustCompile(`^--[a-z0-9][a-z0-9-]*$`)
	for _, f := range vllmServeFlags {
		if !long.MatchString(f) {
			t.Errorf("table entry %q is not a long flag", f)
		}
	}
	for _, f := range []string{
		"--port", "--host", "--model", "--config", "--served-model-name", "--tensor-parallel-size",
		"--data-parallel-size", "--pipeline-parallel-size", "--enable-expert-parallel",
		"--trust-remote-code", "--tokenizer-mode", "--speculative-config", "--compilation-config",
		"--optimization-level", "--kv-cache-dtype", "--enable-prefix-caching", "--no-enable-prefix-caching",
	} {
		if _, ok := slices.BinarySearch(vllmServeFlags, f); !ok {
			t.Errorf("table has no %s", f)
		}
	}
	for long := range shortFlags {
		if _, ok := slices.BinarySearch(vllmServeFlags, shortFlags[long]); !ok {
			t.Errorf("short flag %s stands for %s, which the table does not have", long, shortFlags[long])
		}
	}
}
