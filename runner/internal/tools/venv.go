package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The tools directory holds, per tool set, a symlink named by its key
// (name-hash) to the venv that holds it, under .venvs/KEY.GEN. A venv is
// built at its final path (venvs cannot move: their scripts name their
// python by absolute path) and published by renaming a new symlink over
// the old one, so a job sees either the last complete venv or none, and
// a job already running keeps the venv it resolved. A build that failed
// or was interrupted stays behind under its generation and is never
// used, and is removed by the next build of its set (removeFailed).
const (
	venvsDir = ".venvs"
	lockFile = ".lock"
)

// markerName is the file in the venv that records what was installed
// into it, written only after an install succeeded.
const markerName = "benchkite-tools.json"

type marker struct {
	Set        string `json:"set"`
	LockSHA256 string `json:"lock_sha256"`
	// Files are the hashes of the files no RECORD hashes, taken after
	// the install (verifyVenv).
	Files fileSums `json:"files"`
}

func lockSum(s Set) string { return s.lock().SHA256() }

func buildDir(root string, s Set, gen int) string {
	return filepath.Join(root, venvsDir, s.Key()+"."+strconv.Itoa(gen))
}

func userLockPath(root string, s Set) string {
	return filepath.Join(root, s.Key()+".txt")
}

// current resolves the set's symlink to its venv and says why that
// cannot be used as it is, or "" when its marker records this lock and
// every file in it is what the install left (verifyVenv); n is how many
// files were checked.
func current(link string, s Set) (dir string, why string, n int) {
	dir, err := filepath.EvalSymlinks(link)
	if errors.Is(err, os.ErrNotExist) {
		return "", "no earlier install", 0
	}
	if err != nil {
		return "", err.Error(), 0
	}
	data, err := os.ReadFile(filepath.Join(dir, markerName))
	if err != nil {
		return "", fmt.Sprintf("%s: no complete install: %v", dir, err), 0
	}
	var m marker
	if err := json.Unmarshal(data, &m); err != nil {
		return "", fmt.Sprintf("%s: %v", markerName, err), 0
	}
	if m.LockSHA256 != lockSum(s) {
		return "", fmt.Sprintf("%s was installed from another lock", dir), 0
	}
	n, err = verifyVenv(dir, m.Files)
	if err != nil {
		return "", fmt.Sprintf("%s is not what the lock installed: %v", dir, err), n
	}
	return dir, "", n
}

// generations lists the set's builds under .venvs, finished or not:
// each one's generation and directory.
func generations(root string, s Set) (map[int]string, error) {
	entries, err := os.ReadDir(filepath.Join(root, venvsDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("tools directory: %w", err)
	}
	out := map[int]string{}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), s.Key()+".")
		if !ok {
			continue
		}
		if n, err := strconv.Atoi(rest); err == nil && e.IsDir() {
			out[n] = filepath.Join(root, venvsDir, e.Name())
		}
	}
	return out, nil
}

// nextGeneration is one more than the highest of gens (generations).
func nextGeneration(gens map[int]string) int {
	gen := 0
	for n := range gens {
		gen = max(gen, n)
	}
	return gen + 1
}

// removeFailed removes the builds of gens (generations) that never
// completed (no marker): a failed or interrupted install, several
// hundred megabytes each, which no job uses. The caller holds the tools
// directory's lock, so none of them is being built; a complete venv
// stays, since a job may still run from it. It says on log what it
// removed.
func removeFailed(gens map[int]string, log io.Writer) error {
	for _, dir := range gens {
		if _, err := os.Lstat(filepath.Join(dir, markerName)); !errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove the failed build %s: %w", dir, err)
		}
		fmt.Fprintf(log, "tools: removed %s, a build that never completed\n", dir)
	}
	return nil
}

func writeMarker(dir string, s Set) error {
	sums, err := takeSums(dir)
	if err != nil {
		return fmt.Errorf("record the install: %w", err)
	}
	data, err := json.MarshalIndent(marker{Set: s.Name, LockSHA256: lockSum(s), Files: sums}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, markerName), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("record the install: %w", err)
	}
	return nil
}

// publish points link at dir in one rename.
func publish(link, dir string) error {
	rel, err := filepath.Rel(filepath.Dir(link), dir)
	if err != nil {
		return fmt.Errorf("publish venv: %w", err)
	}
	tmp := fmt.Sprintf("%s.new-%d", link, os.Getpid())
	_ = os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return fmt.Errorf("publish venv: %w", err)
	}
	if err := os.Rename(tmp, link); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("publish venv: %w", err)
	}
	return nil
}

// lockPoll is how often a job waiting for another's install tries again.
const lockPoll = 250 * time.Millisecond

// lockDir takes the tools directory's lock, waiting while another job
// installs, for as long as ctx allows. The kernel drops the lock when the
// process dies, so a killed job never leaves it held.
func lockDir(ctx context.Context, root string, log io.Writer) (func(), error) {
	f, err := os.OpenFile(filepath.Join(root, lockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("tools lock: %w", err)
	}
	waited := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("tools lock %s: %w", f.Name(), err)
		}
		if !waited {
			fmt.Fprintf(log, "tools: waiting for another job's install in %s\n", root)
			waited = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the tools lock: %w", ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}
