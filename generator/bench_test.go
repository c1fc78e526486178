package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/steps"
)

// BenchmarkPipeline10000 keeps the generator cheap on a large catalog. One
// upload holds at most steps.MaxJobsPerUpload jobs, so the whole command
// is measured on a catalog that fits one upload, and loading, selecting and
// assembling (everything but the JSON) on 10,000 recipes.
func BenchmarkPipeline10000(b *testing.B) {
	root := b.TempDir()
	big := filepath.Join(root, "big")
	writeCatalog(b, big, 10000)
	const fits = steps.MaxJobsPerUpload - 20 // room for the report and notes steps
	small := filepath.Join(root, "small")
	writeCatalog(b, small, fits)
	getenv := mapEnv(map[string]string{"BUILDKITE_SOURCE": "schedule"})

	b.Run("load-select-assemble-10000", func(b *testing.B) {
		c := commonFlags{workloadsDir: big, agentsFile: "../agents/profiles.yaml"}
		b.ReportAllocs()
		for b.Loop() {
			profiles, cat, err := c.load(io.Discard)
			if err != nil {
				b.Fatal(err)
			}
			env := selection.ReadBuildEnv(getenv)
			sel, err := selection.Select(cat, env, nil)
			if err != nil {
				b.Fatal(err)
			}
			if len(sel.Runs) != 10000 || len(sel.Invalid) > 0 {
				b.Fatalf("selected %d recipes and %d invalid ones, want 10000 and 0: %v", len(sel.Runs), len(sel.Invalid), cat.Err())
			}
			// Assembly without Validate: 10,000 jobs are over the upload limit.
			if _, err := assemble(sel, profiles, pipelineOptions{getenv: getenv, historyNeeds: "history-needs.tsv"}); err != nil {
				b.Fatal(err)
			}
			_ = selection.Notes(sel, env)
		}
	})

	// The generator's own share, the catalog loaded once: the loader has
	// its own benchmark in workloads.
	b.Run("select-assemble-10000", func(b *testing.B) {
		profiles, cat, err := (&commonFlags{workloadsDir: big, agentsFile: "../agents/profiles.yaml"}).load(io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		env := selection.ReadBuildEnv(getenv)
		b.ReportAllocs()
		for b.Loop() {
			sel, err := selection.Select(cat, env, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := assemble(sel, profiles, pipelineOptions{getenv: getenv, historyNeeds: "history-needs.tsv"}); err != nil {
				b.Fatal(err)
			}
			_ = selection.Notes(sel, env)
		}
	})

	b.Run(fmt.Sprintf("command-%d", fits), func(b *testing.B) {
		args := []string{"--workloads", small, "--agents", "../agents/profiles.yaml"}
		var stderr bytes.Buffer
		b.ReportAllocs()
		for b.Loop() {
			stderr.Reset()
			if code := run(context.Background(), args, cliutil.Streams{Stdout: io.Discard, Stderr: &stderr}, getenv); code != 0 {
				b.Fatalf("generator exited %d:\n%s", code, stderr.String())
			}
		}
	})
}

var nameLine = regexp.MustCompile(`(?m)^name: (\S+)\n`)

// blockedBy matches a blocked_by list; the benchmark wants every recipe
// selected.
var blockedBy = regexp.MustCompile(`(?m)^blocked_by:\n(?:  - .*\n)+`)

// writeCatalog writes n recipes to dir: the shipped recipes, unblocked, and
// then variants of them with distinct names and file names, so that every
// GPU kind and every recipe feature appears. The originals stay so that
// baseline_from still names a recipe.
func writeCatalog(b *testing.B, dir string, n int) {
	b.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	shipped, err := filepath.Glob("../testdata/workloads/*.yaml")
	if err != nil || len(shipped) == 0 {
		b.Fatalf("no shipped recipes: %v", err)
	}
	gpus := map[string]bool{}
	var sources [][]byte
	for _, f := range shipped {
		src, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		src = blockedBy.ReplaceAll(src, nil)
		if !nameLine.Match(src) {
			b.Fatalf("%s has no name line", f)
		}
		if m := regexp.MustCompile(`(?m)^gpu: (\S+)$`).FindSubmatch(src); m != nil {
			gpus[string(m[1])] = true
		}
		sources = append(sources, src)
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), src, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if len(gpus) != 4 {
		b.Fatalf("shipped recipes cover GPUs %v, want all four", gpus)
	}
	for i := len(sources); i < n; i++ {
		src := sources[i%len(sources)]
		stem := strings.TrimSuffix(filepath.Base(shipped[i%len(sources)]), ".yaml")
		variant := nameLine.ReplaceAll(src, []byte(fmt.Sprintf("name: ${1}-%05d\n", i)))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s_%05d.yaml", stem, i)), variant, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
