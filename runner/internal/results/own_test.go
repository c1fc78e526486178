package results_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/results"
)

func TestOwnFile(t *testing.T) {
	t.Parallel()
	start := time.Now()
	write := func(t *testing.T, dir, rel string, mtime time.Time) {
		t.Helper()
		p := filepath.Join(dir, rel)
		testutil.WriteFile(t, p, "{}")
		if !mtime.IsZero() {
			if err := os.Chtimes(p, mtime, mtime); err != nil {
				t.Fatal(err)
			}
		}
	}
	w := results.Window{Start: start, End: start.Add(time.Minute)}
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir string)
		want    string // relative; "" for an error
		wantErr string
	}{
		{"one", func(t *testing.T, d string) { write(t, d, "m/results_2026-01-01T00-00-00.json", time.Time{}) }, "m/results_2026-01-01T00-00-00.json", ""},
		{"none", func(t *testing.T, d string) { write(t, d, "m/samples_gsm8k_2026.jsonl", time.Time{}) }, "", "no lm_eval results"},
		{"a planted newer name beside ours", func(t *testing.T, d string) {
			write(t, d, "m/results_2026-01-01T00-00-00.json", time.Time{})
			write(t, d, "m/results_2099-01-01T00-00-00.json", time.Time{})
		}, "", "2 lm_eval results"},
		{"from before the run", func(t *testing.T, d string) {
			write(t, d, "m/results_2099-01-01T00-00-00.json", start.Add(-time.Hour))
		}, "", "outside its child's run"},
		{"after the run", func(t *testing.T, d string) {
			write(t, d, "m/results_2099-01-01T00-00-00.json", start.Add(time.Hour))
		}, "", "outside its child's run"},
		{"a link", func(t *testing.T, d string) {
			write(t, d, "real.json", time.Time{})
			if err := os.MkdirAll(filepath.Join(d, "m"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Join(d, "real.json"), filepath.Join(d, "m", "results_2026-01-01T00-00-00.json")); err != nil {
				t.Fatal(err)
			}
		}, "", "not a regular file"},
		{"too deep is not looked at", func(t *testing.T, d string) { write(t, d, "a/b/results_2026-01-01T00-00-00.json", time.Time{}) }, "", "no lm_eval results"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			tt.setup(t, dir)
			got, err := results.OwnFile(dir, 1, "lm_eval results", results.IsLMEvalResults, w)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, results.ErrNotOwn) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("OwnFile() = %q, %v; want an ErrNotOwn error containing %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != filepath.Join(dir, tt.want) {
				t.Fatalf("OwnFile() = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestEmptyDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "gsm8k")
	if err := results.EmptyDir(dir); err != nil {
		t.Fatalf("EmptyDir(new) = %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "results_2099-01-01T00-00-00.json"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := results.EmptyDir(dir); !errors.Is(err, results.ErrNotOwn) {
		t.Fatalf("EmptyDir(planted) = %v, want ErrNotOwn", err)
	}
}
