package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ErrUnsupportedSchema marks a summary whose schema_version this build does
// not understand.
var ErrUnsupportedSchema = errors.New("unsupported summary schema_version")

// Encode writes s as indented JSON, stamped with SchemaVersion. The output
// is deterministic: map keys are sorted, times are UTC, and empty lists are
// written as [] rather than null.
func Encode(w io.Writer, s Summary) error {
	s = normalized(s)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("encode summary: %w", err)
	}
	return nil
}

// Write stores s at path atomically: readers see the old file or the new
// one, never a partial write.
func Write(path string, s Summary) (err error) {
	var buf bytes.Buffer
	if err := Encode(&buf, s); err != nil {
		return fmt.Errorf("write summary %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("write summary %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("write summary %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write summary %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write summary %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// Read decodes a summary. It rejects a missing schema_version and one newer
// than SchemaVersion, since fields may have changed meaning; unknown fields
// of a known version are ignored, as later releases may add some.
func Read(r io.Reader) (Summary, error) {
	s, err := read(r)
	if err != nil {
		return Summary{}, fmt.Errorf("read summary: %w", err)
	}
	return s, nil
}

// ReadFile is Read on the named file; errors name the file.
func ReadFile(path string) (Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return Summary{}, fmt.Errorf("read summary: %w", err)
	}
	defer f.Close()
	s, err := read(f)
	if err != nil {
		return Summary{}, fmt.Errorf("read summary %s: %w", path, err)
	}
	return s, nil
}

func read(r io.Reader) (Summary, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return Summary{}, err
	}
	var head struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return Summary{}, err
	}
	switch {
	case head.SchemaVersion == nil:
		return Summary{}, fmt.Errorf("%w: schema_version missing", ErrUnsupportedSchema)
	case *head.SchemaVersion > SchemaVersion:
		return Summary{}, fmt.Errorf("%w: file has version %d, this build reads up to %d; update benchkite",
			ErrUnsupportedSchema, *head.SchemaVersion, SchemaVersion)
	case *head.SchemaVersion < 1:
		return Summary{}, fmt.Errorf("%w: version %d", ErrUnsupportedSchema, *head.SchemaVersion)
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return Summary{}, err
	}
	if err := CheckNumbers(data); err != nil {
		return Summary{}, err
	}
	return s, nil
}

// normalized returns a copy of s in the form Encode writes, leaving the
// caller's slices untouched.
func normalized(s Summary) Summary {
	s.SchemaVersion = SchemaVersion
	s.Started, s.Finished = utc(s.Started), utc(s.Finished)
	s.Phases = append(make([]Phase, 0, len(s.Phases)), s.Phases...)
	for i := range s.Phases {
		s.Phases[i].Started = utc(s.Phases[i].Started)
		s.Phases[i].Finished = utc(s.Phases[i].Finished)
	}
	if s.Bench == nil {
		s.Bench = []BenchRun{}
	}
	if s.Accuracy == nil {
		s.Accuracy = []TaskResult{}
	}
	if s.Gates == nil {
		s.Gates = []GateResult{}
	}
	return s
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}
