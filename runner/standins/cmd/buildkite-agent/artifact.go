package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

var artifactUploadCommand = command{
	valueFlags: []string{"job", "content-type", "delimiter", "concurrency"},
	boolFlags:  []string{"literal", "glob-resolve-follow-symlinks", "upload-skip-symlinks", "follow-symlinks"},
	run:        artifactUpload,
}

// artifactUpload copies the files matching the ";"-separated globs, paths
// relative to the working directory kept, into FAKE_AGENT_ARTIFACTS.
func artifactUpload(a *agent, f flags, _ string) error {
	if len(f.args) == 0 {
		return errors.New("missing upload paths: buildkite-agent artifact upload <pattern> [destination]")
	}
	delim := f.value("delimiter", a.getenv("BUILDKITE_AGENT_ARTIFACT_DELIMITER"))
	if delim == "" {
		delim = ";"
	}
	if f.bools["literal"] {
		return errUnsupported("artifact upload --literal")
	}
	var matched []string
	for _, p := range splitTrim(f.args[0], delim) {
		files, err := a.resolve(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stderr, "Found %d files that match %q\n", len(files), p)
		matched = append(matched, files...)
	}
	slices.Sort(matched)
	matched = slices.Compact(matched)
	if len(matched) == 0 {
		fmt.Fprintf(a.stderr, "No files matched paths: %s\n", f.args[0])
		return nil
	}
	if d := a.getenv(envUploadDelay); d != "" {
		delay, err := time.ParseDuration(d)
		if err != nil {
			return fmt.Errorf("%s: %w", envUploadDelay, err)
		}
		time.Sleep(delay)
	}
	dest := a.getenv(envArtifacts)
	for _, rel := range matched {
		src := rel
		if !filepath.IsAbs(src) {
			src = filepath.Join(a.dir, rel)
		}
		st, err := os.Stat(src)
		if err != nil {
			return fmt.Errorf("stat artifact: %w", err)
		}
		fmt.Fprintf(a.stderr, "Uploading artifact %s (%d bytes)\n", rel, st.Size())
		if dest == "" {
			continue
		}
		if err := copyFile(src, filepath.Join(dest, strings.TrimPrefix(filepath.FromSlash(rel), string(filepath.Separator)))); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.stderr, "Artifact uploads completed successfully\n")
	return nil
}

// resolve lists the regular files matching one pattern, as slash paths
// relative to the working directory (or absolute for absolute patterns).
func (a *agent) resolve(pattern string) ([]string, error) {
	if strings.HasPrefix(pattern, "~/") {
		return nil, errUnsupported("a ~/ artifact path")
	}
	pattern = strings.TrimPrefix(filepath.ToSlash(pattern), "./")
	re, err := globRegexp(pattern)
	if err != nil {
		return nil, err
	}
	abs := strings.HasPrefix(pattern, "/")
	root := globRoot(pattern)
	walkRoot := root
	if !abs {
		walkRoot = filepath.Join(a.dir, root)
	}
	var out []string
	err = filepath.WalkDir(walkRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		name := filepath.ToSlash(path)
		if !abs {
			rel, err := filepath.Rel(a.dir, path)
			if err != nil {
				return err
			}
			name = filepath.ToSlash(rel)
		}
		if re.MatchString(name) {
			out = append(out, name)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("resolve %q: %w", pattern, err)
	}
	return out, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("copy artifact: %w", err)
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("copy artifact: %w", err)
	}
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("copy artifact: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy artifact: %w", err)
	}
	return out.Close()
}
