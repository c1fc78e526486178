package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Window is when a child ran: a file it wrote was modified inside it.
type Window struct{ Start, End time.Time }

// clockSlack allows for file systems whose timestamps come from a coarser
// clock than time.Now (Linux stamps files from a tick-granular clock).
const clockSlack = time.Second

// ErrNotOwn marks result files that the child that should have written
// them cannot be shown to have: none, several, or one from outside its run.
var ErrNotOwn = errors.New("not the child's own result")

// EmptyDir makes dir for a child to write into and checks it holds
// nothing yet: whatever is there before the child starts is not its
// output, and would be read as if it were.
func EmptyDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		names := make([]string, 0, len(entries))
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return fmt.Errorf("%w: %s holds %s before its child ran", ErrNotOwn, dir, strings.Join(names, ", "))
	}
	return nil
}

// OwnFiles returns the files under dir (depth levels down at most, 0 for
// dir alone) whose base name match accepts, sorted. Each must be a
// regular file (not a link) modified within w: a file from before the
// child started or after it ended was not written by it.
func OwnFiles(dir string, depth int, match func(base string) bool, w Window) ([]string, error) {
	var out []string
	root := filepath.Clean(dir)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		level := 0
		if rel != "." {
			level = strings.Count(rel, string(filepath.Separator)) + 1
		}
		if d.IsDir() {
			if level > depth {
				return filepath.SkipDir
			}
			return nil
		}
		if !match(d.Name()) {
			return nil
		}
		info, err := os.Lstat(path)
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%w: %s is not a regular file (%s)", ErrNotOwn, path, info.Mode().Type())
		}
		if m := info.ModTime(); m.Before(w.Start.Add(-clockSlack)) || m.After(w.End.Add(clockSlack)) {
			return fmt.Errorf("%w: %s was modified at %s, outside its child's run (%s to %s)", ErrNotOwn, path,
				m.UTC().Format(time.RFC3339Nano), w.Start.UTC().Format(time.RFC3339Nano), w.End.UTC().Format(time.RFC3339Nano))
		}
		out = append(out, path)
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// OwnFile is the one file OwnFiles finds; none or several are an error
// naming what was looked for (what) and, for several, each file: which
// of them the child wrote cannot be told, so none is taken.
func OwnFile(dir string, depth int, what string, match func(base string) bool, w Window) (string, error) {
	files, err := OwnFiles(dir, depth, match, w)
	switch {
	case err != nil:
		return "", err
	case len(files) == 0:
		return "", fmt.Errorf("%w: no %s in %s", ErrNotOwn, what, dir)
	case len(files) > 1:
		return "", fmt.Errorf("%w: %d %s files in %s (%s): one run writes one; which is this run's cannot be told", ErrNotOwn, len(files), what, dir, strings.Join(files, ", "))
	}
	return files[0], nil
}

// IsLMEvalResults reports whether base is the name of an lm_eval results
// file, results_<date>.json.
func IsLMEvalResults(base string) bool {
	_, ok := resultsStamp(base)
	return ok && strings.HasPrefix(base, "results_")
}
