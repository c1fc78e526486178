package job

import (
	"path/filepath"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/confine"
	"github.com/benchkite/benchkite/runner/internal/tools"
)

// modelCode is how the processes that run model code start: the native
// server, the bench, lm_eval and the BFCL driver, which load a model's
// repository code under --trust-remote-code (the server, the bench) or
// its tokenizer. Each gets a user and a mount namespace of its own
// (runner/internal/confine): no process outside them, the agent's
// bootstrap with the job's tokens and the runner among them, can be read
// from inside, and the tools directory, where later jobs' venvs live, is
// read-only there. A docker server and its bench run in their container
// instead, out of reach of the host's processes. nil under
// Config.Unconfined.
func (j *Job) modelCode() *confine.Policy {
	if j.cfg.Unconfined {
		return nil
	}
	p := &confine.Policy{}
	if j.cfg.Tools != tools.ModePath && j.cfg.ToolsDir != "" {
		if dir, err := filepath.Abs(j.cfg.ToolsDir); err == nil {
			p.ReadOnly = append(p.ReadOnly, dir)
		}
	}
	return p
}

func pathsOrNothing(paths []string) string {
	if len(paths) == 0 {
		return "nothing"
	}
	return strings.Join(paths, ", ")
}
