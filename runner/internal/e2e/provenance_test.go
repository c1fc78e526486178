package e2e

// Provenance and replay end to end on the stand-in docker: every run
// writes results/<recipe>/provenance/, and `runner replay` runs the
// recorded recipe again on the image by digest, or rebuilds a built one
// from the recorded commit.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/execlog"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// runnerCmd runs the runner binary with args in the job's directory and
// environment.
func (e *e2e) runnerCmd(env []string, args ...string) (int, string, string) {
	e.t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Dir = e.dir
	cmd.Env = append(e.environ(), env...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	e.read.addText(out.String(), errOut.String())
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			e.t.Fatalf("runner %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return code, out.String(), errOut.String()
}

func readProvenance(t *testing.T, path string) summary.Provenance {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p summary.Provenance
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// dockerRuns are the images of the docker runs in the start log.
func dockerRunImages(entries []execlog.Entry) []string {
	var out []string
	for _, en := range entries {
		if progs([]execlog.Entry{en})[0] != "docker run" {
			continue
		}
		// The image follows the last flag: --entrypoint sh (the start
		// gate).
		for i, a := range en.Argv {
			if a == "--entrypoint" && i+2 < len(en.Argv) {
				out = append(out, en.Argv[i+2])
			}
		}
	}
	return out
}

func TestE2EProvenanceAndReplayByDigest(t *testing.T) {
	t.Parallel()
	const name = "e2e-replay-digest"
	e, read := newDockerE2E(t, name, 1)
	checkCode(t, e.run(), 0)
	manifest := e.results("provenance", "manifest.json")
	p := readProvenance(t, manifest)
	if p.SchemaVersion != 1 || p.Runtime != "docker" || p.GPU != "H200" || p.Recipe.File != "recipe.yaml" || p.Image.Ref != "vllm/vllm-openai:nightly" {
		t.Errorf("manifest = %+v", p)
	}
	if !strings.HasPrefix(p.Image.ID, "sha256:") || len(p.Image.RepoDigests) != 1 || !strings.HasPrefix(p.Image.RepoDigests[0], "vllm/vllm-openai@sha256:") {
		t.Fatalf("manifest image = %+v, want docker's ID and repository digest", p.Image)
	}
	copyData, _ := os.ReadFile(e.results("provenance", "recipe.yaml"))
	orig, _ := os.ReadFile(filepath.Join(e.dir, "recipe.yaml"))
	if string(copyData) != string(orig) || p.Recipe.SHA256 != sha256Hex(orig) {
		t.Errorf("the recipe copy or its checksum differs from the recipe")
	}
	if s := e.summary(); s.Provenance == nil || s.Provenance.Image.ID != p.Image.ID {
		t.Errorf("summary.json does not carry the provenance")
	}

	code, stdout, stderr := e.runnerCmd(nil, "replay", manifest, "--port", strconv.Itoa(e.port))
	if code != 0 {
		t.Fatalf("replay exit %d\n%s\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(e.dir, "results", name+"-replay", "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s summary.Summary
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if s.Verdict != summary.VerdictPass || s.Image != p.Image.RepoDigests[0] {
		t.Errorf("replay verdict %s on %s, want pass on %s", s.Verdict, s.Image, p.Image.RepoDigests[0])
	}
	images := dockerRunImages(read())
	if len(images) != 2 || images[1] != p.Image.RepoDigests[0] {
		t.Errorf("docker ran %q, want the replay on the recorded digest", images)
	}
}

func TestE2EBuildProvenanceReplay(t *testing.T) {
	t.Parallel()
	const name = "e2e-build"
	recipe := strings.Replace(dockerRecipe(name, 1), "  model: benchkite/tiny-model\n",
		"  model: benchkite/tiny-model\n  image: vllm-local:e2e\n  build:\n    dockerfile: docker/Dockerfile\n    context: docker\n    args: {MAX_JOBS: 4, GIT_TOKEN: null, WHEEL_INDEX: null}\n", 1)
	e, read := newDockerE2E(t, name, 1)
	if err := os.WriteFile(filepath.Join(e.dir, "recipe.yaml"), []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(e.dir, "docker"), 0o755); err != nil {
		t.Fatal(err)
	}
	dockerfile := "ARG MAX_JOBS\nARG GIT_TOKEN\nARG WHEEL_INDEX\nFROM vllm/vllm-openai:nightly\n"
	if err := os.WriteFile(filepath.Join(e.dir, "docker", "Dockerfile"), []byte(dockerfile), 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = e.dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.dir}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "recipe.yaml", "docker/Dockerfile")
	git("commit", "-q", "-m", "recipe")
	head := git("rev-parse", "HEAD")
	const secret = "s3cr3t-build-token"
	e.setenv("GIT_TOKEN", secret)
	// A value from the job's environment under a name that does not look
	// secret: recorded by name only all the same.
	const index = "https://ci:p4ssw0rd-in-url@wheels.example.com/simple"
	e.setenv("WHEEL_INDEX", index)

	o := e.run()
	checkCode(t, o, 0)
	checkPhases(t, e.summary(), map[string]string{"tools": "ok", "build": "ok", "serve": "ok", "ready": "ok", "bench": "ok", "lm_eval": "ok", "gate": "ok"})
	var build *execlog.Entry
	entries := read()
	for i, en := range entries {
		if progs([]execlog.Entry{en})[0] == "docker build" {
			build = &entries[i]
		}
	}
	if build == nil {
		t.Fatalf("no docker build among %q", progs(entries))
	}
	argv := strings.Join(build.Argv, " ")
	for _, want := range []string{" -t vllm-local:e2e ", " --build-arg MAX_JOBS=4 ", " --build-arg GIT_TOKEN ", " --build-arg WHEEL_INDEX "} {
		if !strings.Contains(argv+" ", want) {
			t.Errorf("docker build argv lacks %q: %s", want, argv)
		}
	}
	if !envHas(*build, "GIT_TOKEN="+secret) {
		t.Errorf("docker build lacks the token it passes by name")
	}
	if images := dockerRunImages(entries); len(images) != 1 || images[0] != "vllm-local:e2e" {
		t.Errorf("docker ran %q, want the built image", images)
	}
	p := readProvenance(t, e.results("provenance", "manifest.json"))
	b := p.Build
	if b == nil || b.Commit != head || b.Dirty || b.ContextSubdir != "docker" || b.Dockerfile != "docker/Dockerfile" || b.DockerfileSHA256 != sha256Hex([]byte(dockerfile)) {
		t.Fatalf("manifest build = %+v, want commit %s, clean, context docker", b, head)
	}
	want := []summary.ProvenanceVar{{Name: "MAX_JOBS", Value: "4"}, {Name: "GIT_TOKEN", Redacted: true, FromEnv: true}, {Name: "WHEEL_INDEX", Redacted: true, FromEnv: true}}
	if diff := cmp.Diff(b.Args, want); diff != "" {
		t.Errorf("manifest build args diff (-got +want):\n%s", diff)
	}
	if got, _ := os.ReadFile(e.results("provenance", "Dockerfile")); string(got) != dockerfile {
		t.Errorf("the Dockerfile copy = %q", got)
	}
	if strings.Contains(o.stdout+o.stderr, secret) || strings.Contains(o.stdout+o.stderr, index) {
		t.Errorf("the job log shows the build token")
	}
	filepath.Walk(e.results(), func(path string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			data, _ := os.ReadFile(path)
			for _, v := range []string{secret, index, "p4ssw0rd-in-url"} {
				if strings.Contains(string(data), v) {
					t.Errorf("%s holds the value of a build arg from the environment (%s)", path, v)
				}
			}
		}
		return nil
	})

	manifest := e.results("provenance", "manifest.json")
	e.setenv("GIT_TOKEN", "")
	code, stdout, stderr := e.runnerCmd(nil, "replay", manifest, "--port", strconv.Itoa(e.port))
	if code != 2 || !strings.Contains(stderr, "GIT_TOKEN were redacted") || fileExists(filepath.Join(e.dir, "results", name+"-replay")) {
		t.Errorf("replay without the redacted arg: exit %d, want 2 and nothing run\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = e.runnerCmd([]string{"GIT_TOKEN=" + secret}, "replay", manifest, "--port", strconv.Itoa(e.port))
	if code != 0 {
		t.Fatalf("replay exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := strings.Count(strings.Join(progs(read()), ","), "docker build"); n != 2 {
		t.Errorf("docker build ran %d times, want once more for the replay", n)
	}
	git("commit", "-q", "--allow-empty", "-m", "later")
	code, _, stderr = e.runnerCmd([]string{"GIT_TOKEN=" + secret}, "replay", manifest, "--port", strconv.Itoa(e.port))
	if code == 0 || !strings.Contains(stderr, "git checkout "+head) {
		t.Errorf("replay on another commit: exit %d, want a refusal naming the commit:\n%s", code, stderr)
	}
	e.checkNoLeftovers()
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// A native run's image is its pod's: a replay cannot switch to the
// recorded digest, so it neither pretends to (its provenance records the
// image its own pod names) nor stays quiet about it (it warns which image
// the run had).
func TestE2ENativeReplayRunsOnItsPodsImage(t *testing.T) {
	t.Parallel()
	const name = "e2e-replay-native"
	const runImage = "rocm/vllm-dev@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const podImage = "rocm/vllm-dev@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	e := newE2E(t, name, tinyRecipe(name, 1))
	e.setenv("VLLM_IMAGE", runImage)
	checkCode(t, e.run(), 0)
	manifest := e.results("provenance", "manifest.json")
	p := readProvenance(t, manifest)
	if p.Runtime != "native" || len(p.Image.RepoDigests) != 1 || p.Image.RepoDigests[0] != runImage {
		t.Fatalf("manifest image = %+v on %s, want the pod's digest %s", p.Image, p.Runtime, runImage)
	}
	e.setenv("VLLM_IMAGE", podImage)
	code, stdout, stderr := e.runnerCmd(nil, "replay", manifest, "--port", strconv.Itoa(e.port))
	if code != 0 {
		t.Fatalf("replay exit %d\n%s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "the run was native, on its pod's image "+runImage+"; the replay runs on this pod's ("+podImage+")") {
		t.Errorf("the replay does not say it runs on another image:\n%s", stderr)
	}
	rp := readProvenance(t, filepath.Join(e.dir, "results", name+"-replay", "provenance", "manifest.json"))
	if len(rp.Image.RepoDigests) != 1 || rp.Image.RepoDigests[0] != podImage {
		t.Errorf("the replay's provenance records %+v, want the image its pod names, %s", rp.Image, podImage)
	}
}
