package selection

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/generator/internal/gitrange"
)

// GitFunc runs git with argv and returns stdout; tests substitute a repo
// of their own by running in a temp dir.
type GitFunc = gitrange.Git

// ExecGit runs the git on PATH in dir, never prompting.
func ExecGit(dir string) GitFunc { return gitrange.Exec(dir) }

// PRChanges asks git what HEAD changed since its merge base with the PR's
// base branch: the files added or modified, and the GPU profiles whose
// meaning changed (a comment edit in the profile file runs nothing). A
// shallow checkout is deepened step by step (gitrange.MergeBase) before
// PRChanges gives up; then Err says what git answered.
//
// Paths come back joined to repo, so they compare with recipe paths given
// relative to the same working directory.
func PRChanges(ctx context.Context, git GitFunc, repo, baseBranch, agentsFile string, now *agents.Set) *Changes {
	if baseBranch == "" {
		return &Changes{Err: fmt.Errorf("BUILDKITE_PULL_REQUEST_BASE_BRANCH is empty")}
	}
	found, err := gitrange.MergeBase(ctx, git, baseBranch, gitrange.Options{})
	if err != nil {
		return &Changes{Err: err}
	}
	files, err := gitrange.ChangedFiles(ctx, git, found.MergeBase)
	if err != nil {
		return &Changes{Err: err, Fetches: found.Fetches}
	}
	ch := &Changes{Fetches: found.Fetches}
	profilePath := agentsFile
	if profilePath == "" {
		profilePath = filepath.Join(repo, agents.DefaultPath)
	}
	profilePath = absPath(profilePath)
	for _, f := range files {
		full := absPath(filepath.Join(repo, f))
		ch.Files = append(ch.Files, full)
		if full != profilePath {
			continue
		}
		var before *agents.Set
		if old, err := git(ctx, "show", found.MergeBase+":./"+f); err == nil {
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
