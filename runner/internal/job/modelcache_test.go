package job

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// The summary says where the model cache is, whether it persists, and
// what the server downloaded into it before it was ready.
func TestModelCacheRecordsTheDownload(t *testing.T) {
	t.Parallel()
	node := t.TempDir()
	cache := filepath.Join(node, "hf")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "old.safetensors"), make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	res := &workloads.Resolved{Recipe: &workloads.Recipe{Name: "r-b200"},
		Profile: agents.Profile{GPU: "B200", Runtime: agents.Native, HFHome: cache, K8s: &agents.K8s{HostPaths: []string{node}}}}
	now := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	j := New(Config{Port: 8000}, res, Deps{Log: io.Discard, Getenv: mapGetenv(nil), Now: func() time.Time { return now }})

	mark := j.modelCacheStart()
	if err := os.WriteFile(filepath.Join(cache, "model-00001.safetensors"), make([]byte, 4096), 0o644); err != nil {
		t.Fatal(err)
	}
	now = now.Add(90 * time.Second)
	j.modelCacheDone(mark, true)
	want := &summary.ModelCache{Dir: cache, Backing: "node-local host path " + node + " (hostPath)", Persistent: true, DownloadedBytes: 4096, ReadySeconds: 90}
	if diff := cmp.Diff(want, j.sum.ModelCache); diff != "" {
		t.Errorf("model cache (-want +got):\n%s", diff)
	}
}
