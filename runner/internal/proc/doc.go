// Package proc is the runner's single seam for starting external tools
// (vllm, lm_eval, docker, buildkite-agent).
//
// Every command is an argv array, never a shell line. Each child runs in its
// own session and process group so that stopping it also stops whatever it
// spawned: SIGTERM to the group and to the session's members that left it,
// a grace period (shorter when the command's context ended: a cancel), then
// SIGKILL. What escapes even the session is still the runner's descendant
// once the runner is a child subreaper (BecomeSubreaper), and
// KillDescendants ends it; KillAll is the second signal's SIGKILL of
// everything but the spared commands that publish what exists
// (Spec.Spare), which KillEverything ends at the last deadline. Output
// is copied
// through pipes the package owns, so a descendant that keeps a pipe open
// cannot make Wait hang.
//
// Tests of other packages implement Runner with a small fake of their own.
package proc
