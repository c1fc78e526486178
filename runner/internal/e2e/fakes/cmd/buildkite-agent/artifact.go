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
)

var artifactUploadCommand = command{
	valueFlags: []string{"job", "content-type", "delimiter", "concurrency"},
	boolFlags:  []string{"literal", "glob-resolve-follow-symlinks", "upload-skip-symlinks", "follow-symlinks"},
	run:        artifactUpload,
}

var artifactDownloadCommand = command{
	valueFlags: []string{"job", "step", "build", "include-retried-jobs"},
	run:        artifactDownload,
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
	patterns := []string{f.args[0]}
	if !f.bools["literal"] {
		patterns = splitTrim(f.args[0], delim)
	}
	var matched []string
	for _, p := range patterns {
		files, err := a.resolve(p, f.bools["literal"])
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
func (a *agent) resolve(pattern string, literal bool) ([]string, error) {
	if strings.HasPrefix(pattern, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("expand ~: %w", err)
		}
		pattern = filepath.ToSlash(home) + pattern[1:]
	}
	if literal {
		p := pattern
		if !filepath.IsAbs(p) {
			p = filepath.Join(a.dir, p)
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return []string{filepath.ToSlash(pattern)}, nil
		}
		return nil, nil
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

// artifactDownload copies artifacts matching a glob from
// FAKE_AGENT_ARTIFACTS into the destination directory.
func artifactDownload(a *agent, f flags, _ string) error {
	if len(f.args) < 2 {
		return errors.New("missing arguments: buildkite-agent artifact download <query> <destination>")
	}
	src := a.getenv(envArtifacts)
	if src == "" {
		return fmt.Errorf("no artifacts found for %q (%s is not set)", f.args[0], envArtifacts)
	}
	// Uploads store absolute paths without their leading slash.
	re, err := globRegexp(strings.TrimLeft(strings.TrimPrefix(f.args[0], "./"), "/"))
	if err != nil {
		return err
	}
	dest := f.args[1]
	if !filepath.IsAbs(dest) {
		dest = filepath.Join(a.dir, dest)
	}
	found := 0
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || !re.MatchString(filepath.ToSlash(rel)) {
			return err
		}
		found++
		return copyFile(path, filepath.Join(dest, rel))
	})
	if err != nil {
		return fmt.Errorf("download artifacts: %w", err)
	}
	if found == 0 {
		return fmt.Errorf("no artifacts found for downloading")
	}
	return nil
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
