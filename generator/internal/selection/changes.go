package selection

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/benchkite/benchkite/agents"
)

// GitFunc runs git with argv and returns stdout; tests substitute a repo
// of their own by running in a temp dir.
type GitFunc func(ctx context.Context, args ...string) ([]byte, error)

// ExecGit runs the git on PATH in dir.
func ExecGit(dir string) GitFunc {
	return func(ctx context.Context, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return out, nil
	}
}

// PRChanges asks git what HEAD changed since its merge base with the PR's
// base branch: the files added or modified, and the GPU profiles whose
// meaning changed (a comment edit in the profile file runs nothing).
//
// Paths come back joined to repo, so they compare with recipe paths given
// relative to the same working directory.
func PRChanges(ctx context.Context, git GitFunc, repo, baseBranch, agentsFile string, now *agents.Set) *Changes {
	if baseBranch == "" {
		return &Changes{Err: fmt.Errorf("BUILDKITE_PULL_REQUEST_BASE_BRANCH is empty")}
	}
	base := "origin/" + baseBranch
	mb, err := git(ctx, "merge-base", "HEAD", base)
	if err != nil {
		// Checkouts often fetch only the PR branch; fetch the base once.
		if _, ferr := git(ctx, "fetch", "--quiet", "--no-tags", "origin", baseBranch+":refs/remotes/"+base); ferr != nil {
			return &Changes{Err: fmt.Errorf("find merge base with %s: %w", base, err)}
		}
		if mb, err = git(ctx, "merge-base", "HEAD", base); err != nil {
			return &Changes{Err: fmt.Errorf("find merge base with %s: %w", base, err)}
		}
	}
	mergeBase := strings.TrimSpace(string(mb))
	out, err := git(ctx, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=d", "--relative", mergeBase, "HEAD")
	if err != nil {
		return &Changes{Err: fmt.Errorf("list changed files: %w", err)}
	}
	ch := &Changes{}
	profilePath := agentsFile
	if profilePath == "" {
		profilePath = filepath.Join(repo, agents.DefaultPath)
	}
	profilePath = absPath(profilePath)
	for _, f := range strings.Split(string(out), "\x00") {
		if f == "" {
			continue
		}
		full := absPath(filepath.Join(repo, f))
		ch.Files = append(ch.Files, full)
		if full != profilePath {
			continue
		}
		var before *agents.Set
		if old, err := git(ctx, "show", mergeBase+":./"+f); err == nil {
			before, _ = agents.Parse(f, old)
		}
		ch.Profiles = changedProfiles(before, now)
	}
	return ch
}

// absPath makes paths comparable however the user wrote them: relative
// to the working directory or absolute.
func absPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// changedProfiles lists GPUs whose profile is new or differs; with no
// readable old profiles every GPU counts as changed.
func changedProfiles(before, now *agents.Set) []string {
	var out []string
	for _, gpu := range now.Names() {
		p, _ := now.Lookup(gpu)
		if before != nil {
			if q, ok := before.Lookup(gpu); ok && q.Equal(p) {
				continue
			}
		}
		out = append(out, gpu)
	}
	return out
}
