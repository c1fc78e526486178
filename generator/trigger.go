package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/cliutil"
	"github.com/benchkite/benchkite/workloads"
)

// runTrigger starts a build of the benchkite pipeline through the REST API,
// for a branch and commit, with the vLLM image or commit to test and
// optionally the recipes to run. It validates the recipes first, so a
// typo fails here instead of on the CPU agent.
func runTrigger(ctx context.Context, t triggerConfig, io cliutil.Streams, getenv func(string) string) error {
	c := t.common
	if t.org == "" || t.pipeline == "" {
		return fmt.Errorf("%w: --org and --pipeline (or BUILDKITE_ORGANIZATION_SLUG and BUILDKITE_PIPELINE_SLUG) are required", cliutil.ErrUsage)
	}
	env, err := triggerEnv(t.vllmCommit, t.vllmImage, t.list, t.benchOnly)
	if err != nil {
		return err
	}
	_, cat, err := c.load(io.Stderr)
	if err != nil {
		return err
	}
	if err := cat.Err(); err != nil {
		return &cliutil.ExitError{Code: 1, Err: fmt.Errorf("recipes are invalid; fix them before triggering:\n%w", err)}
	}
	if t.list != "" {
		if _, err := selection.Select(cat, selection.BuildEnv{Workloads: t.list}, nil); err != nil {
			return err
		}
	}
	token := strings.TrimSpace(getenv("BUILDKITE_API_TOKEN"))
	if token == "" {
		return errors.New("BUILDKITE_API_TOKEN is not set (a token with write_builds scope)")
	}
	client, err := bkapi.New(bkapi.Config{BaseURL: t.apiURL, Token: token, Org: t.org, Pipeline: t.pipeline})
	if err != nil {
		return err
	}
	msg := t.message
	if msg == "" {
		msg = "benchkite: " + describeTrigger(env)
	}
	b, err := client.CreateBuild(ctx, bkapi.CreateBuildRequest{Branch: t.branch, Commit: t.commit, Message: msg, Env: env})
	if err != nil {
		return err
	}
	fmt.Fprintln(io.Stdout, b.WebURL)
	return nil
}

// triggerConfig is what `generator trigger` reads from flags and env.
type triggerConfig struct {
	common                                         commonFlags
	apiURL, org, pipeline, branch, commit, message string
	vllmCommit, vllmImage, list                    string
	benchOnly                                      bool
}

// triggerEnv is the build env of a triggered build; it is checked here so
// a bad value never starts a build.
func triggerEnv(vllmCommit, vllmImage, list string, benchOnly bool) (map[string]string, error) {
	env := map[string]string{}
	if vllmCommit != "" {
		if !isHex(vllmCommit) || len(vllmCommit) < 7 || len(vllmCommit) > 40 {
			return nil, fmt.Errorf("%w: --vllm-commit %q must be 7 to 40 lower-case hex digits", cliutil.ErrUsage, vllmCommit)
		}
		env["VLLM_COMMIT"] = vllmCommit
	}
	if vllmImage != "" {
		if _, err := workloads.ParseImageRef(vllmImage); err != nil {
			return nil, fmt.Errorf("%w: --vllm-image: %w", cliutil.ErrUsage, err)
		}
		env["VLLM_IMAGE"] = vllmImage
	}
	if list != "" {
		env["WORKLOADS"] = strings.Join(selection.SplitList(list), ",")
	}
	if benchOnly {
		env["BENCH_ONLY"] = "1"
	}
	return env, nil
}

func isHex(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

func describeTrigger(env map[string]string) string {
	var parts []string
	for _, k := range []string{"WORKLOADS", "VLLM_IMAGE", "VLLM_COMMIT", "BENCH_ONLY"} {
		if v, ok := env[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	if len(parts) == 0 {
		return "nightly set"
	}
	return strings.Join(parts, " ")
}
