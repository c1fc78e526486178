package results

import (
	"fmt"
	"io"
	"os"
)

// parseReader is parse on r, its error saying what was parsed.
func parseReader[T any](r io.Reader, what string, parse func(io.Reader) (T, error)) (T, error) {
	v, err := parse(r)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("parse %s: %w", what, err)
	}
	return v, nil
}

// parseFile is parse on the named file, its errors saying what was
// parsed and, once the file is open, which file.
func parseFile[T any](path, what string, parse func(io.Reader) (T, error)) (T, error) {
	var zero T
	f, err := os.Open(path)
	if err != nil {
		return zero, fmt.Errorf("parse %s: %w", what, err)
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		return zero, fmt.Errorf("parse %s %s: %w", what, path, err)
	}
	return v, nil
}
