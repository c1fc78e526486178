package job

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/envname"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
)

// builds says whether this run builds its image first.
func (j *Job) builds() bool {
	return j.res.Recipe.VLLM.Build != nil && j.res.Profile.Runtime == agents.Docker && j.cfg.BaseURL == ""
}

// insideCheckout resolves a recipe path against the checkout (the job's
// working directory), symlinks included, and refuses one that leaves it.
func insideCheckout(root, rel string) (string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("resolve the checkout: %w", err)
	}
	p, err := filepath.EvalSymlinks(filepath.Join(realRoot, filepath.FromSlash(rel)))
	if err != nil {
		return "", fmt.Errorf("vllm.build: %s: %w", rel, err)
	}
	if r, err := filepath.Rel(realRoot, p); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("vllm.build: %s resolves to %s, outside the checkout %s", rel, p, realRoot)
	}
	return p, nil
}

// buildSpec is `docker build` of the recipe's image. Args with a
// secret-looking name, and those the recipe takes from the job, go by
// name: docker reads their values from its own environment, so none is
// on a command line or in a log.
func (j *Job) buildSpec() (proc.Spec, error) {
	b := j.res.Recipe.VLLM.Build
	root, err := os.Getwd()
	if err != nil {
		return proc.Spec{}, err
	}
	dockerfile, err := insideCheckout(root, b.Dockerfile)
	if err != nil {
		return proc.Spec{}, err
	}
	context, err := insideCheckout(root, b.Context)
	if err != nil {
		return proc.Spec{}, err
	}
	argv := []string{"docker", "build", "-f", dockerfile, "-t", j.res.Image.Image, "--label", LabelRecipe + "=" + j.res.Recipe.Name}
	var byName []childenv.Var
	for _, a := range b.Args {
		if why := envname.BuildArgReason(a.Name); why != "" {
			return proc.Spec{}, fmt.Errorf("vllm.build.args.%s may not be passed: %s", a.Name, why)
		}
		switch {
		case a.FromEnv:
			v, ok := proc.LookupEnv(j.environ, a.Name)
			if !ok {
				return proc.Spec{}, fmt.Errorf("vllm.build.args.%s comes from the job's environment, where it is not set", a.Name)
			}
			argv = append(argv, "--build-arg", a.Name)
			byName = append(byName, childenv.Var{Name: a.Name, Value: v})
		case proc.IsSecretName(a.Name):
			argv = append(argv, "--build-arg", a.Name)
			byName = append(byName, childenv.Var{Name: a.Name, Value: a.Value})
		default:
			argv = append(argv, "--build-arg", a.Name+"="+a.Value)
		}
	}
	argv = append(argv, context)
	env, err := j.env(childenv.Docker, byName...)
	return proc.Spec{Argv: argv, Env: env}, err
}

// build is the build phase: the image is built on the host before the
// server starts from it.
func (j *Job) build(ctx context.Context) error {
	spec, err := j.buildSpec()
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(j.dir, "build.log"))
	if err != nil {
		return fmt.Errorf("create build log: %w", err)
	}
	defer logf.Close()
	tail := proc.NewTail(serverLogTail)
	out := io.MultiWriter(proc.NewPrefixWriter(j.log, "[build] "), logf, tail)
	spec.Stdout, spec.Stderr = out, out
	fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(spec.Argv))
	if err := j.procs.Run(ctx, spec); err != nil {
		if why := lastError(tail.Lines()); why != "" {
			return fmt.Errorf("docker build: %w: %s", err, why)
		}
		return fmt.Errorf("docker build: %w", err)
	}
	return nil
}

// PhaseBuild is the image build, before the server starts.
const PhaseBuild = "build"
