package tools

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/benchkite/benchkite/runner/internal/proc"
)

// TestToolsCost measures the tools phase for one tool set: a first
// install into an empty tools directory with an empty pip cache, then
// the same call again, which reuses the venv. It is a measurement, not a
// check, and runs only when asked:
//
//	BENCHKITE_TOOLS_COST=lm-eval-bfcl go test ./runner/internal/tools -run TestToolsCost -v -timeout 90m
//
// (lm-eval for the set without BFCL). BENCHKITE_TOOLS_COST_DIR is the
// tools directory, kept (the tests' cache directory, say); a temporary
// one otherwise. Downloaded bytes are the sizes pip's log gives for each
// file it downloaded ("Downloading NAME (SIZE)"), with an empty cache.
func TestToolsCost(t *testing.T) {
	set := os.Getenv("BENCHKITE_TOOLS_COST")
	if set == "" {
		t.Skip("a measurement: BENCHKITE_TOOLS_COST=lm-eval|lm-eval-bfcl runs it")
	}
	var s Set
	switch set {
	case Locked(false).Name:
		s = Locked(false)
	case Locked(true).Name:
		s = Locked(true)
	default:
		t.Fatalf("BENCHKITE_TOOLS_COST=%q: want %s or %s", set, Locked(false).Name, Locked(true).Name)
	}
	dir := os.Getenv("BENCHKITE_TOOLS_COST_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	cache := t.TempDir()
	log := &downloadLog{t: t}
	req := Request{
		Python:  realPython(t),
		Dir:     dir,
		Set:     s,
		Environ: append(os.Environ(), "PIP_CACHE_DIR="+cache),
		Log:     log,
	}
	for _, run := range []string{"fresh", "reused"} {
		start := time.Now()
		got, err := Provision(context.Background(), proc.Exec{}, req)
		if err != nil {
			t.Fatalf("%s: %v", run, err)
		}
		wall := time.Since(start)
		disk, err := duBytes(got.Dir)
		if err != nil {
			t.Fatal(err)
		}
		files, bytes := log.take()
		t.Logf("%s %s: reused %t, wall %.1f s, downloaded %d files, %.1f MB, venv %d bytes on disk", s.Key(), run, got.Reused, wall.Seconds(), files, bytes/1e6, disk)
		if (run == "reused") != got.Reused {
			t.Errorf("%s run: reused = %t", run, got.Reused)
		}
	}
}

// downloadLog logs pip's output and adds up what it says it downloaded.
type downloadLog struct {
	t     *testing.T
	mu    sync.Mutex
	files int
	bytes float64
}

var downloading = regexp.MustCompile(`\bDownloading \S+ \(([\d.]+) (bytes|kB|MB|GB)\)`)

var sizeUnits = map[string]float64{"bytes": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}

func (w *downloadLog) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range downloading.FindAllStringSubmatch(string(p), -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err == nil {
			w.files++
			w.bytes += v * sizeUnits[m[2]]
		}
	}
	return len(p), nil
}

func (w *downloadLog) take() (int, float64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f, b := w.files, w.bytes
	w.files, w.bytes = 0, 0
	return f, b
}

// duBytes is the disk the files under dir take, in bytes as du counts
// them (allocated blocks), so a sparse or hard-linked file counts once.
func duBytes(dir string) (int64, error) {
	var n int64
	seen := map[uint64]bool{}
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			if seen[st.Ino] {
				return nil
			}
			seen[st.Ino] = true
			n += st.Blocks * 512
		}
		return nil
	})
	if os.IsNotExist(err) {
		return 0, nil
	}
	return n, err
}
