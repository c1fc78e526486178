package job

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/internal/toollocks"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/proc/proctest"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/workloads/workloadstest"
)

// probeAnswer is what the probe prints for a Python that imports pytest
// at version (or not, when ""), with the named distributions installed.
func probeAnswer(version string, have map[string]string) string {
	var b strings.Builder
	if version != "" {
		b.WriteString("pytest " + version + "\n")
	} else {
		b.WriteString("pytest - ModuleNotFoundError: No module named 'pytest'\n")
	}
	for _, e := range parseLock(toollocks.Pytest().Text) {
		v := have[e.name]
		if v == "" {
			v = "-"
		}
		b.WriteString("dist " + e.name + " " + v + "\n")
	}
	return b.String()
}

// The pytest step leaves a Python that imports pytest alone, installs
// into one that does not only the lock's distributions it lacks, and
// fails, naming the cause, when pip or the import after it fails.
func TestServerPytest(t *testing.T) {
	t.Parallel()
	lockNamesAll := lockNames(parseLock(toollocks.Pytest().Text))
	// The server's Python already has packaging (vLLM needs it): its
	// version stays the server's.
	before := map[string]string{"packaging": "24.2"}
	after := map[string]string{"packaging": "24.2", "iniconfig": "2.3.1", "pluggy": "1.7.0", "pygments": "2.21.0", "pytest": "9.2.0"}
	tests := []struct {
		name       string
		recipe     string
		script     func(f *proctest.Fake, stdin *string)
		want       *summary.ServerPytest
		wantErr    []string
		wantLog    []string
		wantPrefix []string // of every command
	}{
		{
			name:   "importable: nothing installed",
			recipe: seedRecipe,
			script: func(f *proctest.Fake, _ *string) {
				f.Expect("python3", "-c", pytestProbe).Stdout(probeAnswer("8.3.5", map[string]string{"pytest": "8.3.5"}))
			},
			want:    &summary.ServerPytest{Python: "python3", Action: summary.PytestSkipped, Version: "8.3.5"},
			wantLog: []string{"runner: pytest 8.3.5 imports in python3; nothing installed"},
		},
		{
			name:   "missing: the lock's missing distributions installed",
			recipe: seedRecipe,
			script: func(f *proctest.Fake, stdin *string) {
				f.Expect("python3", "-c", pytestProbe).Stdout(probeAnswer("", before))
				f.Expect("python3", "-m", "pip", "install", "--disable-pip-version-check", "--no-input", "--progress-bar", "off", "--require-hashes", "--no-deps", "-r", "/dev/stdin").
					Stdout("Successfully installed iniconfig-2.3.1 pluggy-1.7.0 pygments-2.21.0 pytest-9.2.0\n").
					Do(func(s proc.Spec) {
						b, _ := io.ReadAll(s.Stdin)
						*stdin = string(b)
					})
				f.Expect("python3", "-c", pytestProbe).Stdout(probeAnswer("9.2.0", after))
			},
			want: &summary.ServerPytest{Python: "python3", Action: summary.PytestInstalled, Version: "9.2.0",
				Installed: []string{"iniconfig==2.3.1", "pluggy==1.7.0", "pygments==2.21.0", "pytest==9.2.0"}},
			wantLog: []string{
				"runner: pytest does not import in python3 (ModuleNotFoundError: No module named 'pytest'); installing colorama, exceptiongroup, iniconfig, pluggy, pygments, pytest, tomli, typing-extensions from its lock (pytest-",
				"[pip] Successfully installed iniconfig-2.3.1",
				"runner: installed iniconfig==2.3.1, pluggy==1.7.0, pygments==2.21.0, pytest==9.2.0 into python3 in ",
			},
		},
		{
			name:   "pip fails: the error names pip's reason",
			recipe: seedRecipe,
			script: func(f *proctest.Fake, _ *string) {
				f.Expect("python3", "-c", pytestProbe).Stdout(probeAnswer("", before))
				f.Expect("python3", "-m", "pip", "install").Stderr("ERROR: Could not find a version that satisfies the requirement pytest==9.2.0\n").Exit(1)
			},
			wantErr: []string{"pytest: install into python3 (lock pytest-", "python3 exited with code 1", "Could not find a version that satisfies the requirement pytest==9.2.0"},
		},
		{
			name:   "installed, yet not importable",
			recipe: seedRecipe,
			script: func(f *proctest.Fake, _ *string) {
				f.Expect("python3", "-c", pytestProbe).Stdout(probeAnswer("", before))
				f.Expect("python3", "-m", "pip", "install")
				f.Expect("python3", "-c", pytestProbe).Stdout(strings.Replace(probeAnswer("", after), "ModuleNotFoundError: No module named 'pytest'", "ImportError: cannot import name 'HookimplMarker' from 'pluggy'", 1))
			},
			wantErr: []string{"pip installed it, but python3 still cannot import pytest: ImportError: cannot import name 'HookimplMarker' from 'pluggy'"},
		},
		{
			name:   "installed but broken: nothing to install",
			recipe: seedRecipe,
			script: func(f *proctest.Fake, _ *string) {
				all := map[string]string{}
				for _, n := range lockNamesAll {
					all[n] = "1"
				}
				f.Expect("python3", "-c", pytestProbe).Stdout(probeAnswer("", all))
			},
			wantErr: []string{"python3 cannot import pytest (ModuleNotFoundError: No module named 'pytest'), yet it has every distribution of the lock; nothing to install"},
		},
		{
			name:   "docker: in the container, pip's index by name",
			recipe: dockerRecipe,
			script: func(f *proctest.Fake, stdin *string) {
				c := "benchkite-gpt_oss_120b-h200-job-1"
				f.Expect("docker", "exec", c, "python3", "-c", pytestProbe).Stdout(probeAnswer("", before))
				f.Expect("docker", "exec", "-i", "-e", "PIP_CONFIG_FILE=/dev/null", "-e", "PIP_BREAK_SYSTEM_PACKAGES=1", "-e", "PIP_INDEX_URL", c, "python3", "-m", "pip", "install").
					Do(func(s proc.Spec) {
						b, _ := io.ReadAll(s.Stdin)
						*stdin = string(b)
						if !slices.Contains(s.Env, "PIP_INDEX_URL=https://u:p@mirror.example/simple") {
							t.Errorf("docker's environment lacks the index URL it passes on by name: %q", s.Env)
						}
					})
				f.Expect("docker", "exec", c, "python3", "-c", pytestProbe).Stdout(probeAnswer("9.2.0", after))
			},
			want: &summary.ServerPytest{Python: "docker exec benchkite-gpt_oss_120b-h200-job-1 python3", Action: summary.PytestInstalled, Version: "9.2.0",
				Installed: []string{"iniconfig==2.3.1", "pluggy==1.7.0", "pygments==2.21.0", "pytest==9.2.0"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := workloadstest.Resolve(t, tt.recipe, nil)
			fake := proctest.New(t)
			var stdin string
			tt.script(fake, &stdin)
			var log strings.Builder
			env := map[string]string{"PATH": "/nonexistent", "BUILDKITE_JOB_ID": "job-1", "PIP_INDEX_URL": "https://u:p@mirror.example/simple"}
			var environ []string
			for k, v := range env {
				environ = append(environ, k+"="+v)
			}
			j := New(Config{ResultsDir: t.TempDir(), Port: 8000}, res, Deps{Procs: fake, Log: &log, Getenv: mapGetenv(env), Environ: environ})
			ps, err := j.pytestSpecs()
			if err != nil {
				t.Fatal(err)
			}
			err = j.serverPytest(context.Background(), ps)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatal("the step passed")
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error lacks %q:\n%v", w, err)
					}
				}
				if j.sum.ServerPytest != nil {
					t.Errorf("a failed step recorded %+v", j.sum.ServerPytest)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := j.sum.ServerPytest
			if got == nil {
				t.Fatal("no record in the summary")
			}
			got.DurationSeconds = 0
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("summary record (-want +got):\n%s", diff)
			}
			for _, w := range tt.wantLog {
				if !strings.Contains(log.String(), w) {
					t.Errorf("log lacks %q:\n%s", w, log.String())
				}
			}
			if tt.want.Action == summary.PytestInstalled {
				// Only what is missing, each with its hashes; the
				// server's own packaging is not replaced.
				if strings.Contains(stdin, "packaging==") || !strings.Contains(stdin, "pytest==9.2.0 \\\n    --hash=sha256:") {
					t.Errorf("pip's requirements on stdin:\n%s", stdin)
				}
			}
		})
	}
}

// The server's Python is the one vllm's script names; a vllm that is a
// binary, or names its interpreter through env, leaves it to PATH.
func TestServerPython(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script, want string
	}{
		{"venv script", "#!/opt/venv/bin/python3\nimport sys\n", "/opt/venv/bin/python3"},
		{"env", "#!/usr/bin/env python3\n", "python3"},
		{"binary", "\x7fELF\x02\x01", "python3"},
		{"shell", "#!/bin/sh\nexec python3 -m vllm \"$@\"\n", "python3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "vllm"), []byte(tt.script), 0o755); err != nil {
				t.Fatal(err)
			}
			res := workloadstest.Resolve(t, seedRecipe, nil)
			j := New(Config{Port: 8000}, res, Deps{Getenv: mapGetenv(nil), Environ: []string{"PATH=/nonexistent:" + dir + ":/usr/bin"}})
			if got := j.serverPython(); got != tt.want {
				t.Errorf("serverPython() = %q, want %q", got, tt.want)
			}
		})
	}
}

// The lock splits into one entry per distribution, hashes kept.
func TestParseLock(t *testing.T) {
	t.Parallel()
	entries := parseLock(toollocks.Pytest().Text)
	want := []string{"colorama", "exceptiongroup", "iniconfig", "packaging", "pluggy", "pygments", "pytest", "tomli", "typing-extensions"}
	if diff := cmp.Diff(want, lockNames(entries)); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	// pip's --require-hashes reads each as an exact pin with hashes.
	for _, e := range entries {
		if !strings.HasPrefix(e.text, e.name+"==") || !strings.Contains(e.text, "\n    --hash=sha256:") {
			t.Errorf("%s is not pinned with hashes:\n%s", e.name, e.text)
		}
	}
	if !strings.Contains(lockText(entries), "\npytest==9.2.0 \\\n") {
		t.Errorf("the lock does not pin pytest 9.2.0")
	}
	got, all := lockText(entries), string(toollocks.Pytest().Text)
	if n, want := strings.Count(got, "--hash=sha256:"), strings.Count(all, "--hash=sha256:"); n != want || want == 0 {
		t.Errorf("the entries hold %d hashes, the lock %d", n, want)
	}
}
