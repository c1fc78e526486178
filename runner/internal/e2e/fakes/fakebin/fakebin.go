// Package fakebin builds the stand-in executables (vllm, lm_eval,
// buildkite-agent, docker, aiperf) from their module, runner/standins, for
// tests that run the runner end to end.
package fakebin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// Names of the executables in the directory Build returns.
const (
	VLLM           = "vllm"
	LMEval         = "lm_eval"
	BuildkiteAgent = "buildkite-agent"
	Docker         = "docker"
	AIPerf         = "aiperf"
)

const (
	modulePath = "github.com/benchkite/benchkite"
	// standinsDir is the stand-in programs' own module, which keeps their
	// requirements (docker's CLI packages) out of the product's go.mod.
	standinsDir = "runner/standins"
	// fakesDir holds the in-process fakes the programs are built from too.
	fakesDir = "runner/internal/e2e/fakes"
)

var (
	once     sync.Once
	builtDir string
	buildErr error
)

// Build returns a directory holding the stand-ins, to prepend to
// PATH. They are built once per test binary; the directory is named after
// a hash of the stand-ins' sources, so later test runs reuse it until the
// sources change.
func Build(t testing.TB) string {
	t.Helper()
	once.Do(func() { builtDir, buildErr = build() })
	if buildErr != nil {
		t.Fatalf("fakebin: %v", buildErr)
	}
	return builtDir
}

// Dir is Build for programs that are not tests (the demo).
func Dir() (string, error) {
	once.Do(func() { builtDir, buildErr = build() })
	return builtDir, buildErr
}

func build() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("find the go command: %w", err)
	}
	key, err := sourceHash(root)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(os.TempDir(), "benchkite-fakebin-"+key[:16])
	if complete(dir) {
		return dir, nil
	}

	tmp, err := os.MkdirTemp(os.TempDir(), "benchkite-fakebin-build-")
	if err != nil {
		return "", fmt.Errorf("create build dir: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	args := []string{"build", "-o", tmp + string(filepath.Separator)}
	for _, name := range []string{VLLM, LMEval, BuildkiteAgent, Docker, AIPerf} {
		args = append(args, "./cmd/"+name)
	}
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = filepath.Join(root, standinsDir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out.String())
	}
	// Rename is atomic: concurrent test binaries either win or find the
	// directory another one finished.
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		if !complete(dir) {
			return "", fmt.Errorf("install stand-ins: %w", err)
		}
	}
	return dir, nil
}

func complete(dir string) bool {
	for _, name := range []string{VLLM, LMEval, BuildkiteAgent, Docker, AIPerf} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

// moduleRoot walks up from the working directory (a package directory
// under go test) to this module's go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module "+modulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find module root: no go.mod for " + modulePath + " above the working directory")
		}
		dir = parent
	}
}

// sourceHash covers everything that goes into the binaries: the toolchain,
// both modules' go.mod/go.sum, and the non-test files of the stand-in
// programs and of the fakes they are built from (sources and the files
// they embed).
func sourceHash(root string) (string, error) {
	h := sha256.New()
	fmt.Fprintln(h, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	files := []string{"go.mod", "go.sum"}
	for _, dir := range []string{standinsDir, fakesDir} {
		found, err := buildInputs(root, dir)
		if err != nil {
			return "", fmt.Errorf("hash stand-in sources: %w", err)
		}
		files = append(files, found...)
	}
	for _, rel := range files {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			return "", fmt.Errorf("hash stand-in sources: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", rel, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// buildInputs lists, relative to root, the files under dir a build may
// read: all but tests and test data.
func buildInputs(root, dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, rel)
		return nil
	})
	return files, err
}
