package gitrange

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// Git runs git with args in a work tree and returns its stdout. Errors
// should carry what git wrote on stderr; Exec's do.
type Git func(ctx context.Context, args ...string) ([]byte, error)

// Exec runs the git on PATH in dir, never prompting for credentials, with
// env added to the environment.
func Exec(dir string, env ...string) Git {
	return func(ctx context.Context, args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "GIT_TERMINAL_PROMPT=0"), env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			msg := strings.TrimSpace(stderr.String())
			if msg == "" {
				return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
			}
			return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, msg)
		}
		return out, nil
	}
}

// ErrNoMergeBase is what MergeBase's errors match (errors.Is) when the
// merge base could not be found even after fetching.
var ErrNoMergeBase = errors.New("no merge base")

// DefaultDeepen are the --deepen steps tried before --unshallow: most PRs
// fork within a few dozen commits of the base; a few hundred covers weeks
// of a busy base branch.
var DefaultDeepen = []int{50, 500}

// Options tune MergeBase. The zero value fetches from origin with
// DefaultDeepen.
type Options struct {
	// Remote is the remote the base branch lives on; "origin" if empty.
	Remote string
	// Deepen are the --deepen steps, each counted from the boundary the
	// step before left; nil means DefaultDeepen. After them comes
	// --unshallow.
	Deepen []int
}

// Found is a merge base and how it was found.
type Found struct {
	MergeBase string
	// Fetches are the fetches it took, such as "git fetch --deepen=50
	// origin main", for the notes;
	// empty when the checkout already held it.
	Fetches []string
}

// Error is a merge base not found. It matches ErrNoMergeBase.
type Error struct {
	// Base is the remote-tracking ref, such as origin/main.
	Base string
	// Fetches are the fetches tried.
	Fetches []string
	// Err is git's last answer.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "no merge base of HEAD and %s", e.Base)
	if len(e.Fetches) > 0 {
		fmt.Fprintf(&b, " after %s", strings.Join(e.Fetches, ", then "))
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap lets errors.Is match ErrNoMergeBase and git's own error.
func (e *Error) Unwrap() []error { return []error{ErrNoMergeBase, e.Err} }

// MergeBase finds the merge base of HEAD and remote/baseBranch. When the
// checkout lacks it, it fetches the base branch, then deepens both
// histories step by step, then unshallows, asking again after each fetch.
// A fetch that fails ends the search: git's answer (such as a base branch
// the remote does not have) will not change by fetching more.
func MergeBase(ctx context.Context, git Git, baseBranch string, opt Options) (Found, error) {
	remote := opt.Remote
	if remote == "" {
		remote = "origin"
	}
	base := remote + "/" + baseBranch
	fail := func(fetches []string, err error) (Found, error) {
		return Found{}, &Error{Base: base, Fetches: fetches, Err: err}
	}
	if baseBranch == "" {
		return fail(nil, errors.New("no base branch given"))
	}
	if err := checkBranchName(ctx, git, baseBranch); err != nil {
		return fail(nil, err)
	}
	if mb, err := mergeBase(ctx, git, base); err == nil {
		return Found{MergeBase: mb}, nil
	}

	refspec := "+refs/heads/" + baseBranch + ":refs/remotes/" + base
	deepen := opt.Deepen
	if deepen == nil {
		deepen = DefaultDeepen
	}
	shallow, err := isShallow(ctx, git)
	if err != nil {
		return fail(nil, err)
	}
	// Each step is one fetch flag; in a shallow clone the base branch
	// comes as shallow as the steps below deepen it, in a full one whole.
	first := ""
	if shallow && len(deepen) > 0 && deepen[0] > 0 {
		first = "--depth=" + strconv.Itoa(deepen[0])
	}
	steps := []string{first}
	for _, n := range deepen {
		if n > 0 {
			steps = append(steps, "--deepen="+strconv.Itoa(n))
		}
	}
	steps = append(steps, "--unshallow")

	var fetches []string
	var last error
	for i, flag := range steps {
		if i > 0 {
			// Deepening a complete history fails; nothing more to fetch.
			if shallow, err = isShallow(ctx, git); err != nil {
				return fail(fetches, err)
			}
			if !shallow {
				break
			}
		}
		args := []string{"fetch", "--quiet", "--no-tags"}
		if flag != "" {
			args = append(args, flag)
		}
		args = append(args, remote, refspec)
		fetches = append(fetches, "git fetch "+strings.Join(append(args[3:len(args)-1:len(args)-1], baseBranch), " "))
		if _, err := git(ctx, args...); err != nil {
			return fail(fetches, err)
		}
		mb, err := mergeBase(ctx, git, base)
		if err == nil {
			return Found{MergeBase: mb, Fetches: fetches}, nil
		}
		last = err
	}
	return fail(fetches, last)
}

func mergeBase(ctx context.Context, git Git, base string) (string, error) {
	out, err := git(ctx, "merge-base", "HEAD", base)
	if err != nil {
		return "", err
	}
	mb := strings.TrimSpace(string(out))
	if mb == "" {
		return "", fmt.Errorf("git merge-base HEAD %s: no output", base)
	}
	return mb, nil
}

func isShallow(ctx context.Context, git Git) (bool, error) {
	out, err := git(ctx, "rev-parse", "--is-shallow-repository")
	if err != nil {
		return false, err
	}
	return strings.TrimSpace(string(out)) == "true", nil
}

// checkBranchName refuses a base branch git would read as an option or a
// refspec pattern; it comes from the build's environment.
func checkBranchName(ctx context.Context, git Git, branch string) error {
	if strings.HasPrefix(branch, "-") || strings.ContainsAny(branch, "*:") {
		return fmt.Errorf("base branch %q is not a branch name", branch)
	}
	if _, err := git(ctx, "check-ref-format", "--branch", branch); err != nil {
		return fmt.Errorf("base branch %q is not a branch name: %w", branch, err)
	}
	return nil
}

// ChangedFiles lists the files HEAD added or modified since mergeBase
// (deleted ones are gone; a rename counts as an addition), relative to
// git's working directory.
func ChangedFiles(ctx context.Context, git Git, mergeBase string) ([]string, error) {
	out, err := git(ctx, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=d", "--relative", mergeBase, "HEAD")
	if err != nil {
		return nil, fmt.Errorf("list changed files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}
