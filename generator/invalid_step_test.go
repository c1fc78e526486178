package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/steps/steptest"
)

// The failing step of an invalid recipe must show its problems exactly and
// run nothing of them, after the agent's upload and in a real shell: the
// test recipe's file name and fields hold $(touch ...) and quotes.
func TestInvalidRecipeStepIsSafe(t *testing.T) {
	t.Parallel()
	agent := steptest.AgentBinary(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash is needed to run the step as an agent would: %v", err)
	}
	var sc scenario
	for _, s := range scenarios() {
		if s.name == "invalid-recipe-in-nightly" {
			sc = s
		}
	}
	if sc.name == "" {
		t.Fatal("no invalid-recipe-in-nightly scenario")
	}
	// What the step must print: the problems exactly as lint prints them.
	lint := runGenerator(t, nil, append([]string{"lint"}, sc.args...)...)
	if lint.code != 1 || !strings.Contains(lint.stdout, "$(touch") {
		t.Fatalf("lint of the invalid recipes = %+v, want problems quoting the hostile text", lint)
	}

	const pwned = "/tmp/pwned"
	before, statErr := os.Stat(pwned)
	if statErr != nil && !errors.Is(statErr, fs.ErrNotExist) {
		t.Fatal(statErr)
	}

	uploaded := steptest.Normalize(steptest.DryRun(t, agent, generate(t, sc))).(map[string]any)
	var step map[string]any
	for _, s := range uploaded["steps"].([]any) {
		if m, ok := s.(map[string]any); ok && strings.HasPrefix(m["key"].(string), "invalid:") {
			if step != nil {
				t.Fatal("more than one invalid-recipe step")
			}
			step = m
		}
	}
	if step == nil {
		t.Fatalf("no invalid-recipe step in %v", uploaded)
	}
	command, _ := step["command"].(string)
	if command == "" {
		t.Fatalf("invalid-recipe step has no command: %v", step)
	}

	// Run the command as the agent's bootstrap does: bash -c in the
	// checkout with the step's env.
	work := t.TempDir()
	env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + work}
	for k, v := range step["env"].(map[string]any) {
		env = append(env, k+"="+v.(string))
	}
	cmd := exec.Command(bash, "-c", command)
	cmd.Dir = work
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Errorf("the step's command exited with %v, want a non-zero exit status", err)
	}
	if got := stderr.String(); got != lint.stdout {
		t.Errorf("the step's stderr is not the problems text exactly\ngot:\n%s\nwant:\n%s", got, lint.stdout)
	}
	if got, want := stdout.String(), "+++ :warning: invalid recipe\n"; got != want {
		t.Errorf("the step's stdout = %q, want %q", got, want)
	}

	var created []string
	err = filepath.WalkDir(work, func(path string, d fs.DirEntry, err error) error {
		if path != work {
			created = append(created, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(created) > 0 {
		slices.Sort(created)
		t.Errorf("the step created files: %q", created)
	}
	after, err := os.Stat(pwned)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		t.Fatal(err)
	case before == nil || !after.ModTime().Equal(before.ModTime()):
		t.Errorf("%s was created or touched while the step ran", pwned)
	}
}
