package tools

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// A venv the tools directory keeps is reused by later jobs, other
// recipes among them, and model code of an earlier job may have been
// able to write to it: one .pth file in site-packages runs code in every
// later lm_eval. So a venv is reused only when every file in it is what
// the install left there: each file a distribution's RECORD lists with a
// hash (pip's dist-info RECORD: path, sha256 in URL-safe base64, size)
// has that hash and size; each other file (the bytecode pip compiled,
// which RECORD lists without a hash, or with the hash of the file a
// wheel shipped and pip compiled over; the venv's own pyvenv.cfg,
// activate scripts and python links; the lock) has the hash taken right
// after the install, kept in the marker. Any other file, or any difference, and
// the venv is built again.

// fileSums are the hashes taken after an install of the venv's files
// that no RECORD hashes, by slash path below the venv: "sha256:<hex>"
// for a file, "symlink:<target>" for a link.
type fileSums map[string]string

// recordEntry is one line of a RECORD: the file, its hash and its size,
// as written (hash and size may be empty).
type recordEntry struct {
	hash, size string
}

// sha256 says whether the entry's hash is a sha256 one, the only kind
// checked.
func (e recordEntry) sha256() bool {
	algo, _, _ := strings.Cut(e.hash, "=")
	return algo == "sha256"
}

// matches says whether a file of sum (sha256) and size is the one the
// entry records.
func (e recordEntry) matches(sum []byte, size int64) bool {
	_, want, _ := strings.Cut(e.hash, "=")
	return base64.RawURLEncoding.EncodeToString(sum) == strings.TrimRight(want, "=") &&
		(e.size == "" || e.size == strconv.FormatInt(size, 10))
}

// verifyVenv says why dir is not what its install left (nil when it
// is) and how many files it checked.
func verifyVenv(dir string, sums fileSums) (int, error) {
	if sums == nil {
		return 0, errors.New("its marker holds no file hashes (installed by an older runner)")
	}
	recorded, err := readRecords(dir)
	if err != nil {
		return 0, err
	}
	// Walk first, then hash on every core: a venv holds tens of
	// thousands of files.
	files, seen, err := listVenv(dir)
	n := len(files)
	if err != nil {
		return n, fmt.Errorf("read the venv: %w", err)
	}
	if bad := checkFiles(files, recorded, sums); len(bad) > 0 {
		sort.Strings(bad)
		return n, errors.New(strings.Join(bad[:min(len(bad), 5)], "; "))
	}
	if gone := goneFiles(recorded, sums, seen); len(gone) > 0 {
		sort.Strings(gone)
		return n, fmt.Errorf("%s is gone", strings.Join(gone[:min(len(gone), 5)], ", "))
	}
	return n, nil
}

// venvFile is one file of a venv, rel its slash path below the venv.
type venvFile struct {
	path, rel string
	d         fs.DirEntry
}

// listVenv lists the files of the venv at dir but its marker, and the
// set of their slash paths; after an error, those listed before it.
func listVenv(dir string) ([]venvFile, map[string]bool, error) {
	var files []venvFile
	seen := map[string]bool{}
	err := walkVenv(dir, func(f venvFile) error {
		seen[f.rel] = true
		files = append(files, f)
		return nil
	})
	return files, seen, err
}

// walkVenv hands each file of the venv at dir but its marker to each, in
// lexical order, and stops at the first error.
func walkVenv(dir string, each func(venvFile) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == markerName {
			return nil
		}
		return each(venvFile{path, rel, d})
	})
}

// checkFiles checks files on every core (checkFile) and says how they
// differ from the install; it stops handing out files once five differ.
func checkFiles(files []venvFile, recorded map[string]recordEntry, sums fileSums) []string {
	work := make(chan venvFile)
	var mu sync.Mutex
	var bad []string
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range work {
				if why := checkFile(f.path, f.rel, f.d, recorded, sums); why != "" {
					mu.Lock()
					bad = append(bad, why)
					mu.Unlock()
				}
			}
		}()
	}
	for _, f := range files {
		mu.Lock()
		stop := len(bad) >= 5
		mu.Unlock()
		if stop {
			break
		}
		work <- f
	}
	close(work)
	wg.Wait()
	return bad
}

// goneFiles are the files the install left that are not in the venv now
// (seen): a file gone is also a change.
func goneFiles(recorded map[string]recordEntry, sums fileSums, seen map[string]bool) []string {
	var gone []string
	for rel := range sums {
		if !seen[rel] {
			gone = append(gone, rel)
		}
	}
	for rel, e := range recorded {
		if e.hash != "" && !seen[rel] {
			gone = append(gone, rel)
		}
	}
	return gone
}

// checkFile says how the file at rel differs from the install, or "".
func checkFile(path, rel string, d fs.DirEntry, recorded map[string]recordEntry, sums fileSums) string {
	if d.Type()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(path)
		if err != nil {
			return fmt.Sprintf("%s: %v", rel, err)
		}
		if sums[rel] != "symlink:"+target {
			return fmt.Sprintf("%s is a link to %s that the install did not make", rel, target)
		}
		return ""
	}
	if !d.Type().IsRegular() {
		return fmt.Sprintf("%s is not a regular file", rel)
	}
	if e, ok := recorded[rel]; ok && e.hash != "" {
		if !e.sha256() {
			return fmt.Sprintf("%s: RECORD hash %q is not sha256", rel, e.hash)
		}
		sum, size, err := hashFile(path)
		if err != nil {
			return fmt.Sprintf("%s: %v", rel, err)
		}
		if e.matches(sum, size) {
			return ""
		}
		// pip compiles bytecode over a wheel's own: such a file differed
		// from its RECORD already after the install, which kept its hash.
		if sums[rel] == "sha256:"+hex.EncodeToString(sum) {
			return ""
		}
		return fmt.Sprintf("%s does not match its RECORD hash", rel)
	}
	want, ok := sums[rel]
	if !ok {
		if _, listed := recorded[rel]; listed {
			return fmt.Sprintf("%s is listed without a hash and was not there after the install", rel)
		}
		return fmt.Sprintf("%s is in no RECORD and was not there after the install", rel)
	}
	sum, _, err := hashFile(path)
	if err != nil {
		return fmt.Sprintf("%s: %v", rel, err)
	}
	if want != "sha256:"+hex.EncodeToString(sum) {
		return fmt.Sprintf("%s changed since the install", rel)
	}
	return ""
}

// takeSums hashes the files of a venv just installed that no RECORD
// hashes, for verifyVenv.
func takeSums(dir string) (fileSums, error) {
	recorded, err := readRecords(dir)
	if err != nil {
		return nil, err
	}
	sums := fileSums{}
	err = walkVenv(dir, func(f venvFile) error {
		if f.d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(f.path)
			if err != nil {
				return err
			}
			sums[f.rel] = "symlink:" + target
			return nil
		}
		if !f.d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", f.rel)
		}
		sum, size, err := hashFile(f.path)
		if err != nil {
			return err
		}
		if e, ok := recorded[f.rel]; ok && e.hash != "" && e.sha256() && e.matches(sum, size) {
			return nil
		}
		sums[f.rel] = "sha256:" + hex.EncodeToString(sum)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hash the venv %s: %w", dir, err)
	}
	return sums, nil
}

// readRecords reads every dist-info RECORD in the venv's site-packages
// folders, by slash path below the venv. A RECORD path is relative to
// the folder holding the dist-info (scripts name ../../../bin/...); one
// that leaves the venv is not the venv's and is left out.
func readRecords(dir string) (map[string]recordEntry, error) {
	records, err := filepath.Glob(filepath.Join(dir, "lib", "python*", "site-packages", "*.dist-info", "RECORD"))
	if err != nil {
		return nil, err
	}
	sort.Strings(records)
	out := map[string]recordEntry{}
	for _, rec := range records {
		base := filepath.Dir(filepath.Dir(rec))
		f, err := os.Open(rec)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", rec, err)
		}
		r := csv.NewReader(f)
		r.FieldsPerRecord = -1
		rows, err := r.ReadAll()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", rec, err)
		}
		for _, row := range rows {
			if len(row) == 0 || row[0] == "" {
				continue
			}
			abs := filepath.Join(base, filepath.FromSlash(row[0]))
			rel, err := filepath.Rel(dir, abs)
			if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				continue
			}
			e := recordEntry{}
			if len(row) > 1 {
				e.hash = row[1]
			}
			if len(row) > 2 {
				e.size = row[2]
			}
			key := filepath.ToSlash(rel)
			if prev, ok := out[key]; ok && prev.hash != "" && e.hash == "" {
				continue // a hash another RECORD gives is kept
			}
			out[key] = e
		}
	}
	return out, nil
}

func hashFile(path string) ([]byte, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, 0, err
	}
	return h.Sum(nil), n, nil
}
