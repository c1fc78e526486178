// Package proc is the runner's single seam for starting external tools
// (vllm, lm_eval, docker, buildkite-agent).
//
// Every command is an argv array, never a shell line. Each child runs in its
// own process group so that stopping it also stops whatever it spawned:
// SIGTERM to the group, a grace period, then SIGKILL. Output is copied
// through pipes the package owns, so a descendant that keeps a pipe open
// cannot make Wait hang.
//
// Tests of other packages implement Runner with a small fake of their own.
package proc
