package annotate

import (
	"testing"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

func TestModelCacheLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mc   *summary.ModelCache
		want string
	}{
		{nil, ""},
		{&summary.ModelCache{Dir: "/root/.cache/huggingface", Backing: "emptyDir (from default)", DownloadedBytes: 230e9, ReadySeconds: 1260},
			"Model cache `/root/.cache/huggingface` (emptyDir (from default); not kept: every job downloads the model again) · downloaded 230.0 GB; the server was ready after 21m0s"},
		{&summary.ModelCache{Dir: "/mnt/shared/hf_cache", Backing: "node-local host path /mnt/shared (hostPath)", Persistent: true, ReadySeconds: 95},
			"Model cache `/mnt/shared/hf_cache` (node-local host path /mnt/shared (hostPath); kept on the node) · nothing downloaded"},
		{&summary.ModelCache{Dir: "/mnt/x", Backing: "docker volume", Persistent: true, DownloadedBytes: -1, ReadySeconds: 95},
			"Model cache `/mnt/x` (docker volume; kept on the node)"},
	}
	for _, tt := range tests {
		if got := modelCacheLine(tt.mc); got != tt.want {
			t.Errorf("modelCacheLine(%+v) =\n%q\nwant\n%q", tt.mc, got, tt.want)
		}
	}
}
