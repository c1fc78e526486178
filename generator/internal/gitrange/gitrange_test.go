package gitrange

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/google/go-cmp/cmp"
)

// hermetic keeps the machine's git configuration out of the tests.
var hermetic = []string{
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_CONFIG_GLOBAL=" + os.DevNull,
	"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
	"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
	"GIT_PROTOCOL_FROM_USER=1",
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := Exec(dir, hermetic...)(context.Background(), args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

func commit(t *testing.T, dir, file, text, msg string) {
	t.Helper()
	testutil.WriteFile(t, filepath.Join(dir, file), text)
	git(t, dir, "add", "--", file)
	git(t, dir, "commit", "--quiet", "-m", msg)
}

// origin builds a repository whose main branch moved on after the PR
// branch forked: three commits on pr touch one recipe, three on main touch
// another recipe and code. It returns the repository and the fork point.
func origin(t *testing.T) (dir, fork string) {
	t.Helper()
	dir = t.TempDir()
	git(t, dir, "init", "--quiet", "--initial-branch=main")
	commit(t, dir, "workloads/alpha_h200.yaml", "name: alpha\n", "alpha")
	commit(t, dir, "workloads/beta_b200.yaml", "name: beta\n", "beta")
	commit(t, dir, "README.md", "readme\n", "readme")
	fork = git(t, dir, "rev-parse", "HEAD")
	git(t, dir, "checkout", "--quiet", "-b", "pr")
	for i, s := range []string{"# one\n", "# two\n", "# three\n"} {
		commit(t, dir, "workloads/alpha_h200.yaml", "name: alpha\n"+strings.Repeat(s, i+1), "pr "+s)
	}
	git(t, dir, "checkout", "--quiet", "main")
	commit(t, dir, "workloads/beta_b200.yaml", "name: beta\n# main\n", "main 1")
	commit(t, dir, "runner/main.go", "package main\n", "main 2")
	commit(t, dir, "README.md", "readme 2\n", "main 3")
	return dir, fork
}

// unrelatedPR is a shallow PR clone of an origin whose branch unrelated
// shares no history with its main.
func unrelatedPR(t *testing.T) string {
	t.Helper()
	src, _ := origin(t)
	git(t, src, "checkout", "--quiet", "--orphan", "unrelated")
	git(t, src, "rm", "-r", "--quiet", "--cached", ".")
	commit(t, src, "other.txt", "x\n", "unrelated root")
	return shallowPR(t, src)
}

// shallowPR is what a CI agent checks out: the PR branch alone, depth 1,
// over file:// (a local path clone would ignore --depth).
func shallowPR(t *testing.T, origin string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "checkout")
	cmd := exec.Command("git", "clone", "--quiet", "--depth", "1", "--branch", "pr", "file://"+origin, dir)
	cmd.Env = append(os.Environ(), hermetic...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v: %s", err, out)
	}
	if got := git(t, dir, "rev-parse", "--is-shallow-repository"); got != "true" {
		t.Fatalf("clone is not shallow (%s)", got)
	}
	return dir
}

func TestMergeBaseInShallowClone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		deepen  []int
		fetches []string
	}{
		{
			name:   "found while deepening",
			deepen: []int{1, 2},
			fetches: []string{
				"git fetch --depth=1 origin main",
				"git fetch --deepen=1 origin main",
				"git fetch --deepen=2 origin main",
			},
		},
		{
			name:   "deepening falls short, unshallow finds it",
			deepen: []int{1},
			fetches: []string{
				"git fetch --depth=1 origin main",
				"git fetch --deepen=1 origin main",
				"git fetch --unshallow origin main",
			},
		},
		{
			// Fifty commits hold all of main, but HEAD's own history
			// still stops at HEAD until it is deepened too.
			name:    "the default steps",
			fetches: []string{"git fetch --depth=50 origin main", "git fetch --deepen=50 origin main"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			src, fork := origin(t)
			dir := shallowPR(t, src)
			g := Exec(dir, hermetic...)
			// What the generator did before: the base branch alone is not
			// enough, HEAD's history stops at HEAD.
			if _, err := g(context.Background(), "fetch", "--quiet", "--no-tags", "--depth=1", "origin", "+refs/heads/main:refs/remotes/origin/main"); err != nil {
				t.Fatal(err)
			}
			if _, err := g(context.Background(), "merge-base", "HEAD", "origin/main"); err == nil {
				t.Fatal("merge-base found in a depth-1 clone with the base fetched; the test shows nothing")
			}
			git(t, dir, "update-ref", "-d", "refs/remotes/origin/main")

			got, err := MergeBase(context.Background(), g, "main", Options{Deepen: tt.deepen})
			if err != nil {
				t.Fatalf("MergeBase() error = %v", err)
			}
			if diff := cmp.Diff(got, Found{MergeBase: fork, Fetches: tt.fetches}); diff != "" {
				t.Errorf("MergeBase() diff (-got +want):\n%s", diff)
			}
			files, err := ChangedFiles(context.Background(), g, got.MergeBase)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(files, []string{"workloads/alpha_h200.yaml"}); diff != "" {
				t.Errorf("ChangedFiles() diff (-got +want):\n%s", diff)
			}
		})
	}
}

// A full checkout that already has the base branch fetches nothing.
func TestMergeBaseAlreadyThere(t *testing.T) {
	t.Parallel()
	src, fork := origin(t)
	dir := filepath.Join(t.TempDir(), "checkout")
	cmd := exec.Command("git", "clone", "--quiet", "file://"+src, dir)
	cmd.Env = append(os.Environ(), hermetic...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v: %s", err, out)
	}
	git(t, dir, "checkout", "--quiet", "pr")
	// A fetch would fail: there is no origin to fetch from any more.
	if err := os.RemoveAll(src); err != nil {
		t.Fatal(err)
	}
	got, err := MergeBase(context.Background(), Exec(dir, hermetic...), "main", Options{})
	if err != nil {
		t.Fatalf("MergeBase() error = %v", err)
	}
	if diff := cmp.Diff(got, Found{MergeBase: fork}); diff != "" {
		t.Errorf("MergeBase() diff (-got +want):\n%s", diff)
	}
}

func TestMergeBaseGivesUp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup returns the checkout to ask.
		setup   func(t *testing.T) string
		base    string
		deepen  []int
		want    []string // the error says all of these
		fetches int
	}{
		{
			name: "origin lacks the base branch",
			setup: func(t *testing.T) string {
				src, _ := origin(t)
				return shallowPR(t, src)
			},
			base: "release-9",
			want: []string{
				"no merge base of HEAD and origin/release-9 after git fetch --depth=50 origin release-9: ",
				"couldn't find remote ref refs/heads/release-9",
			},
			fetches: 1,
		},
		{
			name:   "the base branch shares no history",
			setup:  unrelatedPR,
			base:   "unrelated",
			deepen: []int{1},
			want: []string{
				"no merge base of HEAD and origin/unrelated after git fetch --depth=1 origin unrelated, then git fetch --deepen=1 origin unrelated, then git fetch --unshallow origin unrelated: ",
				"git merge-base HEAD origin/unrelated: exit status 1",
			},
			fetches: 3,
		},
		{
			// Deepening made the history whole; --unshallow would fail.
			name:  "no shared history, whole after deepening",
			setup: unrelatedPR,
			base:  "unrelated",
			want: []string{
				"no merge base of HEAD and origin/unrelated after git fetch --depth=50 origin unrelated, then git fetch --deepen=50 origin unrelated: ",
			},
			fetches: 2,
		},
		{
			name:    "no base branch",
			setup:   func(t *testing.T) string { return t.TempDir() },
			base:    "",
			want:    []string{"no merge base of HEAD and origin/: no base branch given"},
			fetches: 0,
		},
		{
			name: "a base branch that reads as an option",
			setup: func(t *testing.T) string {
				src, _ := origin(t)
				return shallowPR(t, src)
			},
			base:    "--upload-pack=touch pwned",
			want:    []string{`base branch "--upload-pack=touch pwned" is not a branch name`},
			fetches: 0,
		},
		{
			name:    "not a git repository",
			setup:   func(t *testing.T) string { return t.TempDir() },
			base:    "main",
			want:    []string{"no merge base of HEAD and origin/main: git rev-parse --is-shallow-repository: exit status 128: fatal: not a git repository"},
			fetches: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := tt.setup(t)
			got, err := MergeBase(context.Background(), Exec(dir, hermetic...), tt.base, Options{Deepen: tt.deepen})
			if err == nil {
				t.Fatalf("MergeBase() = %+v, want an error", got)
			}
			if !errors.Is(err, ErrNoMergeBase) {
				t.Errorf("MergeBase() error %v is not ErrNoMergeBase", err)
			}
			var e *Error
			if !errors.As(err, &e) || len(e.Fetches) != tt.fetches {
				t.Errorf("MergeBase() error = %#v, want an *Error with %d fetches", err, tt.fetches)
			}
			for _, s := range tt.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("MergeBase() error = %q\ndoes not say %q", err, s)
				}
			}
			if _, statErr := os.Stat(filepath.Join(dir, "pwned")); statErr == nil {
				t.Errorf("a base branch name ran a command")
			}
		})
	}
}
