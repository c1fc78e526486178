package job

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Provenance files, in results/<recipe>/provenance/.
const (
	ProvenanceDir      = "provenance"
	ProvenanceManifest = "manifest.json"
	provenanceRecipe   = "recipe.yaml"
	provenanceDocker   = "Dockerfile"
)

// writeProvenance writes the provenance folder and puts the manifest in
// the summary, so ingest records carry it. Every run writes it, a failed
// one too: what ran is what a person re-runs to see the failure again.
func (j *Job) writeProvenance(ctx context.Context) {
	p, recipeSrc, dockerfileSrc := j.provenance(ctx)
	j.sum.Provenance = p
	dir := filepath.Join(j.dir, ProvenanceDir)
	err := os.MkdirAll(dir, 0o755)
	if err == nil && recipeSrc != nil {
		err = os.WriteFile(filepath.Join(dir, provenanceRecipe), recipeSrc, 0o644)
	}
	if err == nil && dockerfileSrc != nil {
		err = os.WriteFile(filepath.Join(dir, provenanceDocker), dockerfileSrc, 0o644)
	}
	if err == nil {
		var data []byte
		data, err = json.MarshalIndent(p, "", "  ")
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, ProvenanceManifest), append(data, '\n'), 0o644)
		}
	}
	if err != nil {
		fmt.Fprintf(j.log, "runner: warning: write provenance: %v\n", err)
	}
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// provenance gathers the manifest; what cannot be read is left empty and
// said in the log, never guessed.
func (j *Job) provenance(ctx context.Context) (*summary.Provenance, []byte, []byte) {
	res := j.res
	p := &summary.Provenance{
		SchemaVersion: summary.ProvenanceSchemaVersion,
		Runtime:       string(res.Profile.Runtime),
		GPU:           res.Recipe.GPU,
		Image:         summary.ProvenanceImage{Ref: res.Image.Image, Source: res.Image.Source},
		Env:           []summary.ProvenanceVar{},
	}
	if res.PullImage != "" && res.PullImage != res.Image.Image {
		p.Image.Pull = res.PullImage
	}
	p.Recipe.File = res.Recipe.Path
	recipeSrc, err := os.ReadFile(res.Recipe.Path)
	if err != nil {
		fmt.Fprintf(j.log, "runner: warning: provenance: %v\n", err)
		recipeSrc = nil
	} else {
		p.Recipe.SHA256 = sha256Hex(recipeSrc)
		p.Recipe.Copy = provenanceRecipe
	}
	for _, e := range res.Env {
		v := summary.ProvenanceVar{Name: e.Name, Value: e.Value}
		if proc.IsSecretName(e.Name) {
			v.Value, v.Redacted = "", true
		}
		p.Env = append(p.Env, v)
	}
	if res.Profile.Runtime == agents.Docker && j.cfg.BaseURL == "" {
		j.inspectImage(ctx, &p.Image)
	} else if at := strings.LastIndex(res.Image.Image, "@"); at >= 0 {
		// The pod ran the image by this digest.
		p.Image.RepoDigests = []string{res.Image.Image}
	}
	var dockerfileSrc []byte
	if b := res.Recipe.VLLM.Build; b != nil {
		p.Build, dockerfileSrc = j.buildProvenance(ctx)
	}
	return p, recipeSrc, dockerfileSrc
}

// inspectImage asks docker for the image's ID and repository digests.
func (j *Job) inspectImage(ctx context.Context, img *summary.ProvenanceImage) {
	env, err := j.env(childenv.Docker)
	if err != nil {
		return
	}
	ref := j.res.PullImage
	if ref == "" {
		ref = j.res.Image.Image
	}
	var out strings.Builder
	spec := proc.Spec{Argv: []string{"docker", "image", "inspect", "--format", "{{json .}}", ref}, Env: env, Stdout: &out, Stderr: io.Discard}
	if err := j.procs.Run(ctx, spec); err != nil {
		fmt.Fprintf(j.log, "runner: warning: provenance: docker image inspect %s: %v\n", ref, err)
		return
	}
	var got struct {
		ID          string `json:"Id"`
		RepoDigests []string
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(out.String())), &got); err != nil {
		fmt.Fprintf(j.log, "runner: warning: provenance: docker image inspect %s: %v\n", ref, err)
		return
	}
	img.ID, img.RepoDigests = got.ID, got.RepoDigests
}

// git runs git in the checkout and returns its trimmed output.
func (j *Job) git(ctx context.Context, args ...string) (string, error) {
	env, err := j.env(childenv.Docker)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	err = j.procs.Run(ctx, proc.Spec{Argv: append([]string{"git"}, args...), Env: env, Stdout: &out, Stderr: io.Discard})
	return strings.TrimSpace(out.String()), err
}

// buildProvenance is how the image was built: the Dockerfile, the args,
// and the source tree: repository, commit, context below the top, and
// whether it had changes. An arg the recipe takes from the job's
// environment is recorded by name only, whatever its name: the recipe
// took it from there because its value is the job's to hold (a token
// under any name, an index URL with credentials), and the manifest
// travels in summary.json and every ingest record. A secret-looking name
// loses its value too.
func (j *Job) buildProvenance(ctx context.Context) (*summary.ProvenanceBuild, []byte) {
	b := j.res.Recipe.VLLM.Build
	pb := &summary.ProvenanceBuild{Dockerfile: b.Dockerfile, Context: b.Context, Args: []summary.ProvenanceVar{}}
	for _, a := range b.Args {
		v := summary.ProvenanceVar{Name: a.Name, Value: a.Value, FromEnv: a.FromEnv}
		if a.FromEnv || proc.IsSecretName(a.Name) {
			v.Value, v.Redacted = "", true
		}
		pb.Args = append(pb.Args, v)
	}
	var src []byte
	if root, err := os.Getwd(); err == nil {
		if data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(b.Dockerfile))); err == nil {
			src = data
			pb.DockerfileSHA256, pb.DockerfileCopy = sha256Hex(data), provenanceDocker
		}
		if top, err := j.git(ctx, "rev-parse", "--show-toplevel"); err == nil {
			if rel, err := filepath.Rel(top, filepath.Join(root, filepath.FromSlash(b.Context))); err == nil {
				pb.ContextSubdir = filepath.ToSlash(rel)
			}
			pb.Commit, _ = j.git(ctx, "rev-parse", "HEAD")
			if u, err := j.git(ctx, "config", "--get", "remote.origin.url"); err == nil {
				pb.SourceRepo = withoutCredentials(u)
			}
			// What the job itself wrote into the checkout is not the source.
			status, err := j.git(ctx, "status", "--porcelain", "--", b.Context, b.Dockerfile, ":(exclude)results", ":(exclude).benchkite")
			pb.Dirty = err != nil || status != ""
		} else {
			fmt.Fprintf(j.log, "runner: warning: provenance: the checkout is not a git repository; source commit unknown\n")
			pb.Dirty = true
		}
	}
	if pb.SourceRepo == "" {
		pb.SourceRepo = withoutCredentials(j.getenv("BUILDKITE_REPO"))
	}
	return pb, src
}

// withoutCredentials drops user:password from a URL.
func withoutCredentials(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	u.User = nil
	return u.String()
}

// recorder is a proc.Runner that starts nothing and keeps the specs, for
// the plan's list of what writing the provenance runs.
type recorder struct{ specs []proc.Spec }

func (r *recorder) Run(_ context.Context, s proc.Spec) error {
	r.specs = append(r.specs, s)
	return nil
}

func (r *recorder) Start(context.Context, proc.Spec) (proc.Process, error) {
	return nil, fmt.Errorf("the plan starts nothing")
}

// provenanceSpecs are the commands writing the provenance runs, found by
// gathering it with a recorder in place of the exec seam.
func (j *Job) provenanceSpecs() []proc.Spec {
	rec := &recorder{}
	saved, savedLog := j.procs, j.log
	j.procs, j.log = rec, io.Discard
	defer func() { j.procs, j.log = saved, savedLog }()
	j.provenance(context.Background())
	return rec.specs
}
