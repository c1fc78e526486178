package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
)

// readers are the runner outputs of one test that people read: the
// logs of every runner process and job it started. checkReadable scans
// them, with the files the runs left, when the test ends.
type readers struct {
	mu    sync.Mutex
	logs  []*lineLog
	texts []string
}

func (r *readers) add(l ...*lineLog) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, l...)
}

// addText adds output already read to its end.
func (r *readers) addText(s ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.texts = append(r.texts, s...)
}

func (r *readers) text() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]string(nil), r.texts...)
	for _, l := range r.logs {
		out = append(out, l.String())
	}
	return out
}

// checkReadable fails t when a number in exponent notation is in text a
// person reads: the logs given, and under dir every annotation, report
// and trend page (.md, .html, .svg) and every string of every
// summary.json (messages, bounds, problems, the detector's why). The
// tools' own files (lm_eval's and BFCL's result folders, the stand-in
// agent's call log) are theirs, not the runner's.
func checkReadable(t testing.TB, dir string, logs ...string) {
	t.Helper()
	for i, l := range logs {
		testutil.CheckNoExponent(t, "log "+string(rune('a'+i%26)), l)
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			switch d.Name() {
			case "gsm8k", "bfcl", "hf", ".venvs", "venv", "site-packages":
				return filepath.SkipDir
			}
			return nil
		}
		switch ext := filepath.Ext(path); {
		case d.Name() == "summary.json":
			data, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			var v any
			if json.Unmarshal(data, &v) == nil {
				testutil.CheckNoExponent(t, rel, strings.Join(jsonStrings(v, nil), "\n"))
			}
		case ext == ".md" || ext == ".html" || ext == ".svg":
			data, err := os.ReadFile(path)
			if err == nil {
				testutil.CheckNoExponent(t, rel, string(data))
			}
		}
		return nil
	})
}

// jsonStrings appends every string value in v (not the keys).
func jsonStrings(v any, out []string) []string {
	switch x := v.(type) {
	case string:
		out = append(out, x)
	case []any:
		for _, e := range x {
			out = jsonStrings(e, out)
		}
	case map[string]any:
		for _, e := range x {
			out = jsonStrings(e, out)
		}
	}
	return out
}

// The scan itself: it finds what it is for, and passes readable text.
func TestCheckReadable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(rel, text string) {
		t.Helper()
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("results/r/summary.json", `{"gates": [{"message": "8k output_throughput = 1.765e+04: first nights", "value": 17650.3}]}`)
	write("agent/annotations/r.md", "| 17,650 | p < 0.0001 |\n")
	write("results/_report/trends.html", "<text>2e+04</text>")
	write("results/r/gsm8k/m/results.json", `{"x": "1e-05"}`)
	rec := &recorder{TB: t}
	checkReadable(rec, dir, "runner: 8k: 17,650 output tok/s", "lr 3e-05")
	want := []string{
		"log b writes a number in exponent notation: 3e-05 in: lr 3e-05",
		"results/_report/trends.html writes a number in exponent notation: 2e+04 in: <text>2e+04</text>",
		"results/r/summary.json writes a number in exponent notation: 1.765e+04 in: 8k output_throughput = 1.765e+04: first nights",
	}
	if strings.Join(rec.errs, "\n") != strings.Join(want, "\n") {
		t.Errorf("checkReadable() reported:\n%s\nwant:\n%s", strings.Join(rec.errs, "\n"), strings.Join(want, "\n"))
	}
}

// recorder keeps the errors reported to it instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, strings.TrimSpace(fmt.Sprintf(format, args...)))
}
