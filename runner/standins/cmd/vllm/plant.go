package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// plant is a hostile server's move: once it has answered a request, it
// copies each file of from (a folder) into every folder under into, the
// way model code run with --trust-remote-code could write a score of its
// choosing where the runner reads results. Files it planted are not
// copied again.
func plant(ctx context.Context, from, into string, serving func() bool) {
	if from == "" || into == "" {
		return
	}
	entries, err := os.ReadDir(from)
	if err != nil {
		return
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if !serving() {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			continue
		}
		_ = filepath.WalkDir(into, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() || strings.Contains(path, ".old-") {
				return nil
			}
			for _, e := range entries {
				dst := filepath.Join(path, e.Name())
				if _, err := os.Lstat(dst); err == nil {
					continue
				}
				if data, err := os.ReadFile(filepath.Join(from, e.Name())); err == nil {
					_ = os.WriteFile(dst, data, 0o644)
				}
			}
			return nil
		})
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// scoreValue is a gsm8k exact_match value in an lm_eval results file.
var scoreValue = regexp.MustCompile(`("exact_match,(?:strict-match|flexible-extract)":\s*)(-?[0-9.eE+-]+|NaN|-?Infinity)`)

// rewrite is the same server's other move: every lm_eval results file
// under into that appears gets its exact_match scores replaced by score,
// in place (same file, same inode), and its modification time put back,
// so the file still looks written by lm_eval during its run.
func rewrite(ctx context.Context, into, score string) {
	if into == "" || score == "" {
		return
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		_ = filepath.WalkDir(into, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.Contains(path, ".old-") {
				return nil
			}
			if base := d.Name(); !strings.HasPrefix(base, "results_") || !strings.HasSuffix(base, ".json") {
				return nil
			}
			info, err := os.Stat(path)
			if err != nil {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			out := scoreValue.ReplaceAll(data, []byte("${1}"+score))
			if string(out) == string(data) {
				return nil
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				return nil
			}
			_, _ = f.Write(out)
			_ = f.Close()
			_ = os.Chtimes(path, info.ModTime(), info.ModTime())
			return nil
		})
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
