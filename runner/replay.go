package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/jobflags"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"gopkg.in/yaml.v3"
)

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// replayPlan is what `runner replay` decided from a manifest: the recipe
// copy to run, the image to pin, and what a person must know.
type replayPlan struct {
	recipe string
	name   string
	image  string // VLLM_IMAGE for the run; "" for a rebuilt image
	// pod: the run was native, on its pod's image, which a replay cannot
	// choose: it runs on its own pod's, VLLM_IMAGE left as the job has it.
	pod      bool
	warnings []string
}

// readManifest reads and checks a provenance manifest and the recipe copy
// beside it.
func readManifest(path string) (summary.Provenance, []byte, error) {
	var p summary.Provenance
	data, err := os.ReadFile(path)
	if err != nil {
		return p, nil, fmt.Errorf("read manifest: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return p, nil, fmt.Errorf("%s: not a provenance manifest: %w", path, err)
	}
	if p.SchemaVersion != summary.ProvenanceSchemaVersion {
		return p, nil, fmt.Errorf("%s: schema_version %d; this runner reads %d", path, p.SchemaVersion, summary.ProvenanceSchemaVersion)
	}
	if p.Recipe.Copy == "" {
		return p, nil, fmt.Errorf("%s: the run kept no copy of its recipe", path)
	}
	recipe, err := os.ReadFile(filepath.Join(filepath.Dir(path), filepath.FromSlash(p.Recipe.Copy)))
	if err != nil {
		return p, nil, fmt.Errorf("read the recipe copy: %w", err)
	}
	if got := sha256Hex(recipe); got != p.Recipe.SHA256 {
		return p, nil, fmt.Errorf("%s: the recipe copy's SHA-256 is %s, the manifest says %s: it was changed since the run", path, got, p.Recipe.SHA256)
	}
	return p, recipe, nil
}

// planReplay decides how to re-run: the image by digest, or rebuilt from
// the recorded commit (the checkout must be at it) and Dockerfile. A
// redacted build argument must come from the environment: without it the
// replay refuses rather than build something else.
func planReplay(manifest string, p summary.Provenance, getenv func(string) string, head func() (string, error)) (replayPlan, error) {
	rp := replayPlan{recipe: filepath.Join(filepath.Dir(manifest), filepath.FromSlash(p.Recipe.Copy))}
	if b := p.Build; b != nil {
		var missing []string
		for _, a := range b.Args {
			if a.Redacted && a.FromEnv && getenv(a.Name) == "" {
				missing = append(missing, a.Name)
			}
		}
		if len(missing) > 0 {
			return rp, fmt.Errorf("%w: build argument(s) %s were redacted from the manifest and are not set; a replay does not run unattended without them: set them in the environment", cliutil.ErrUsage, strings.Join(missing, ", "))
		}
		if b.Dirty {
			rp.warnings = append(rp.warnings, fmt.Sprintf("the source tree was dirty when %s was built: changes not in commit %s are not in the rebuild", p.Image.Ref, orUnknown(b.Commit)))
		}
		if b.Commit != "" {
			got, err := head()
			if err != nil {
				return rp, fmt.Errorf("replay rebuilds %s from commit %s: read the checkout's commit: %w", p.Image.Ref, b.Commit, err)
			}
			if got != b.Commit {
				return rp, fmt.Errorf("replay rebuilds %s from commit %s, but the checkout is at %s: git checkout %s first", p.Image.Ref, b.Commit, got, b.Commit)
			}
		}
		if root, err := os.Getwd(); err == nil && b.DockerfileSHA256 != "" {
			if data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(b.Dockerfile))); err == nil && sha256Hex(data) != b.DockerfileSHA256 {
				rp.warnings = append(rp.warnings, fmt.Sprintf("%s differs from the one the run built (its copy is in the provenance folder)", b.Dockerfile))
			}
		}
		return rp, nil
	}
	if p.Runtime == string(agents.Native) {
		// The image is the pod's: naming a digest in VLLM_IMAGE would not
		// change what runs, only what the replay's provenance claims.
		rp.pod = true
		want := p.Image.Ref
		if len(p.Image.RepoDigests) > 0 {
			want = p.Image.RepoDigests[0]
		}
		have := getenv("VLLM_IMAGE")
		if digestOf(have) == "" || digestOf(have) != digestOf(want) {
			rp.warnings = append(rp.warnings, fmt.Sprintf("the run was native, on its pod's image %s; the replay runs on this pod's (%s), which it cannot change: run it in a pod of %s to reproduce the run", want, orUnknown(have), want))
		}
		return rp, nil
	}
	switch {
	case len(p.Image.RepoDigests) > 0:
		rp.image = p.Image.RepoDigests[0]
	case strings.Contains(p.Image.Ref, "@sha256:"):
		rp.image = p.Image.Ref
	default:
		rp.image = p.Image.Ref
		rp.warnings = append(rp.warnings, fmt.Sprintf("no digest of %s was recorded: the tag may name another image now", p.Image.Ref))
	}
	return rp, nil
}

// digestOf is the sha256 digest an image reference pins, "" when none.
func digestOf(ref string) string {
	if _, d, ok := strings.Cut(ref, "@"); ok && strings.HasPrefix(d, "sha256:") {
		return d
	}
	return ""
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// runReplay is `runner replay MANIFEST [run flags]`: the recorded recipe
// on the recorded image, into results/<recipe>-replay unless --results
// says otherwise.
func runReplay(ctx context.Context, c jobflags.Config, io cliutil.Streams, getenv func(string) string, environ []string) error {
	manifest := c.Recipe
	p, recipe, err := readManifest(manifest)
	if err != nil {
		return err
	}
	head := func() (string, error) {
		cmd := exec.CommandContext(ctx, "git", "rev-parse", "HEAD")
		cmd.Env = []string{"PATH=" + getenv("PATH"), "HOME=" + getenv("HOME")}
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	rp, err := planReplay(manifest, p, getenv, head)
	if err != nil {
		return err
	}
	var named struct {
		Name string `yaml:"name"`
	}
	_ = yaml.Unmarshal(recipe, &named) // runRun reports a bad recipe
	for _, w := range rp.warnings {
		fmt.Fprintf(io.Stderr, "runner replay: warning: %s\n", w)
	}
	// The recorded image, whatever the build pins per platform.
	override := map[string]string{"VLLM_IMAGE": rp.image, "VLLM_COMMIT": "", "VLLM_IMAGE_CUDA": "", "VLLM_IMAGE_ROCM": "", "VLLM_IMAGE_XPU": ""}
	if rp.pod {
		delete(override, "VLLM_IMAGE") // the pod's, as the job has it
	}
	get := func(k string) string {
		if v, ok := override[k]; ok {
			return v
		}
		return getenv(k)
	}
	var env []string
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := override[k]; !ok {
			env = append(env, kv)
		}
	}
	if rp.image != "" {
		env = append(env, "VLLM_IMAGE="+rp.image)
	}
	c.Recipe = rp.recipe
	if c.Job.ResultsDir == "" && named.Name != "" {
		c.Job.ResultsDir = contract.ResultsDir(named.Name) + "-replay"
	}
	fmt.Fprintf(io.Stdout, "runner replay: %s on %s\n", rp.recipe, orRebuilt(rp.image, p))
	return runRun(ctx, c, io, get, env)
}

func orRebuilt(image string, p summary.Provenance) string {
	if image != "" {
		return image
	}
	if p.Build == nil {
		return "this pod's image"
	}
	return p.Image.Ref + " rebuilt from " + p.Build.Dockerfile
}
