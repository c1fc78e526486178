package baseline_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/baseline"
)

// "could not fetch" is said only when the fetch failed; a fetch that
// worked and found no passing night says that.
func TestFileSourceWords(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "baselines.json")
	f := &baseline.File{Version: baseline.FileVersion}
	f.Record("empty", "recipe:empty", 10, baseline.Result{},
		fmt.Errorf("%w: none of the last 12 finished scheduled builds has a passed \"recipe:empty\" job", baseline.ErrNoPassingNight))
	f.Record("down", "recipe:down", 10, baseline.Result{}, fmt.Errorf("%w: 503 Service Unavailable", baseline.ErrNoBaseline))
	if err := f.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	src := baseline.FileSource(path)
	_, err := src.Last(context.Background(), "empty", "recipe:empty", 10)
	if !errors.Is(err, baseline.ErrNoBaseline) || strings.Contains(err.Error(), "could not fetch") ||
		!strings.Contains(err.Error(), "the history step found no passing night of empty: none of the last 12") {
		t.Errorf("no passing night: %v", err)
	}
	_, err = src.Last(context.Background(), "down", "recipe:down", 10)
	if !errors.Is(err, baseline.ErrNoBaseline) || !strings.Contains(err.Error(), "the history step could not fetch down: ") {
		t.Errorf("failed fetch: %v", err)
	}
}
