package history

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/buildkite"
)

// The needs can come in a file (--needs-file, the generator's
// --history-needs): read as the environment's are, errors naming the
// file, and never from both places at once.
func TestRunReadsNeedsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "needs.tsv")
	bad := filepath.Join(dir, "bad.tsv")
	if err := os.WriteFile(good, []byte(contract.EncodeNeeds([]contract.Need{{Recipe: "a-h200", Nights: 3}, {Recipe: "b-h200", Nights: 10}})), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("a-h200\t3\nb-h200\tmany\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noAPI := func(context.Context) (baseline.Source, error) { return nil, errors.New("no API token") }
	out := t.TempDir()
	var stdout bytes.Buffer
	err := run(context.Background(), Config{Out: out, NeedsFile: good}, cliutil.Streams{Stdout: &stdout, Stderr: &stdout}, func(string) string { return "" }, buildkite.Door{}, noAPI)
	if err == nil || errors.Is(err, cliutil.ErrUsage) {
		t.Fatalf("run() = %v, want the API's failure", err)
	}
	for _, r := range []string{"a-h200", "b-h200"} {
		if _, err := os.Stat(filepath.Join(out, "recipes", r+".json")); err != nil {
			t.Errorf("no history file of %s, a need of the file: %v", r, err)
		}
	}
	tests := []struct {
		c    Config
		want string
	}{
		{Config{NeedsFile: bad}, bad + ": " + contract.HistoryEnv + " line 2"},
		{Config{NeedsFile: filepath.Join(dir, "none.tsv")}, "none.tsv"},
		{Config{NeedsFile: good, Needs: "a-h200\t3"}, "not both"},
	}
	for _, tt := range tests {
		tt.c.Out = t.TempDir()
		err := run(context.Background(), tt.c, cliutil.Streams{Stdout: &stdout, Stderr: &stdout}, func(string) string { return "" }, buildkite.Door{}, noAPI)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%+v) = %v, want %q", tt.c, err, tt.want)
		}
	}
}
