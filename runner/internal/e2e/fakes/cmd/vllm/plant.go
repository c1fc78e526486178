package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
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
