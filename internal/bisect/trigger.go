package bisect

import (
	"context"
	"fmt"

	"github.com/benchkite/benchkite/internal/bkapi"
)

// Trigger starts the build that tests s's next midpoint: only s's recipe,
// bench only, on the nightly image of that commit, with the state in its
// environment for its report step to judge and go on.
func Trigger(ctx context.Context, c *bkapi.Client, s State, branch string) (bkapi.Build, string, error) {
	commit, err := s.Next()
	if err != nil {
		return bkapi.Build{}, "", err
	}
	state, err := s.Encode()
	if err != nil {
		return bkapi.Build{}, "", err
	}
	left := s.Hi - s.Lo - 1
	b, err := c.CreateBuild(ctx, bkapi.CreateBuildRequest{
		Branch: branch,
		Message: fmt.Sprintf("Bisect %s %s regression of build #%d: test vLLM %s (%d commit(s) left)",
			s.Recipe, s.Metric, s.Origin, short(commit), left),
		Env: map[string]string{"VLLM_COMMIT": commit, "WORKLOADS": s.Recipe, "BENCH_ONLY": "1", Env: state, MACEnv: c.MAC(macPurpose, state)},
	})
	if err != nil {
		return bkapi.Build{}, "", fmt.Errorf("bisect %s: trigger the build of %s: %w", s.Recipe, short(commit), err)
	}
	return b, commit, nil
}

// MACEnv carries the MAC of a triggered build's state (bkapi.Client.MAC):
// anyone who can start a build can set BENCHKITE_BISECT, and only a
// state the pipeline's own report step wrote is followed.
const MACEnv = "BENCHKITE_BISECT_MAC"

const macPurpose = "bisect state"

// Authentic checks that state came with the MAC the report step that
// triggered its build gave it, under c's token.
func Authentic(c *bkapi.Client, state, mac string) error {
	if mac == "" {
		return fmt.Errorf("%s came without %s: not a bisect build this pipeline triggered; ignored", Env, MACEnv)
	}
	if !c.CheckMAC(macPurpose, state, mac) {
		return fmt.Errorf("%s does not match %s under this pipeline's API token: not a bisect build this pipeline triggered; ignored", Env, MACEnv)
	}
	return nil
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
