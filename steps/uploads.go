package steps

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteUploads writes each upload as dir/pipeline-NNN.json, in the order
// they must be uploaded. The files appear together or not at all: they are
// written to a new directory beside dir, which then takes dir's place; dir
// must not exist or be empty, so no file of an earlier run is uploaded.
func WriteUploads(dir string, uploads [][]byte) error {
	dir = filepath.Clean(dir)
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("write pipeline: %s is not empty", dir)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "."+filepath.Base(dir)+"-*")
	if err != nil {
		return fmt.Errorf("write pipeline: %w", err)
	}
	for i, b := range uploads {
		if err := os.WriteFile(filepath.Join(tmp, fmt.Sprintf("pipeline-%03d.json", i+1)), b, 0o644); err != nil {
			os.RemoveAll(tmp)
			return fmt.Errorf("write pipeline: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("write pipeline: %w", err)
	}
	_ = os.Remove(dir) // an empty directory gives way; a missing one is fine
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("write pipeline: %w", err)
	}
	return nil
}
