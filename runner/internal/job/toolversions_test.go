package job

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/proc/proctest"
	"github.com/benchkite/benchkite/runner/internal/tools"
	"github.com/benchkite/benchkite/workloads/workloadstest"
)

// With --tools path nothing is installed: the fingerprint and the
// summary record the versions lm_eval's own interpreter reports, not the
// pins, and a tool it cannot tell about as unknown.
func TestPathToolsFingerprintWhatRan(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "lm_eval"), []byte("#!/opt/py/bin/python3.12\nimport lm_eval\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := workloadstest.Resolve(t, seedRecipe, nil)
	fake := proctest.New(t)
	fake.Expect("/opt/py/bin/python3.12", "-c").Stdout("lm-eval 0.4.9.1\n")
	j := New(Config{Port: 8000, Tools: tools.ModePath}, res, Deps{Procs: fake, Log: io.Discard, Getenv: mapGetenv(nil), Environ: []string{"PATH=" + bin}})
	pinned := j.sum.Fingerprint.Hash
	if err := j.provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := j.sum.Fingerprint.Parts.Tools["lm-eval"]; got != "0.4.9.1" {
		t.Errorf("fingerprint lm-eval = %q, want the version that ran, 0.4.9.1", got)
	}
	if j.sum.Fingerprint.Hash == pinned {
		t.Errorf("fingerprint unchanged from the pinned versions'")
	}
	if got := j.sum.Tools.Versions["lm-eval"]; got != "0.4.9.1" {
		t.Errorf("summary tools = %+v", j.sum.Tools)
	}

	// An interpreter that cannot tell: unknown, never the pin.
	fake2 := proctest.New(t)
	fake2.Expect("/opt/py/bin/python3.12", "-c").Stdout("lm-eval unknown\n")
	j2 := New(Config{Port: 8000, Tools: tools.ModePath}, res, Deps{Procs: fake2, Log: io.Discard, Getenv: mapGetenv(nil), Environ: []string{"PATH=" + bin}})
	if err := j2.provision(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := j2.sum.Fingerprint.Parts.Tools["lm-eval"]; got != unknownVersion {
		t.Errorf("fingerprint lm-eval = %q, want %q", got, unknownVersion)
	}
}
