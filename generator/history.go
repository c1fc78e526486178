package main

import (
	"fmt"

	"github.com/benchkite/benchkite/generator/internal/needs"
	"github.com/benchkite/benchkite/generator/internal/selection"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/internal/shell"
	"github.com/benchkite/benchkite/steps"
)

// historyStep fetches those nights once, on the CPU queue where the API
// token is, and leaves them as artifacts, one file per recipe: GPU jobs
// hold no token and make no API call. Nothing waits for it: each GPU job
// downloads its recipes' files at its gate phase (runner run
// --history-step), waiting for this step then if it still runs. Its
// timeout bounds that wait too.
//
// Its needs travel in a file, the artifact needsFile of the generating
// step, when one is given: at a few thousand recipes they are larger than
// an environment variable can be (Linux takes at most 128 KiB a string)
// and the step would not start. Without one they travel in its
// environment, up to maxEnvNeeds.
func historyStep(sel *selection.Selection, queue, needsFile string) (steps.CommandStep, error) {
	download := shell.Join([]string{"buildkite-agent", "artifact", "download", contract.RunnerArtifact, ".", "--step", contract.BootstrapStepKey})
	chmod := shell.Join([]string{"chmod", "+x", contract.RunnerArtifact})
	s := steps.CommandStep{
		Label:            ":card_file_box: history",
		Key:              contract.HistoryStepKey,
		Agents:           cpuAgents(queue),
		TimeoutInMinutes: historyTimeoutMinutes,
		ArtifactPaths:    []string{contract.ArtifactGlob(contract.HistoryDir)},
	}
	encoded := contract.EncodeNeeds(needs.Of(sel))
	if needsFile != "" {
		s.Commands = []string{download, chmod,
			shell.Join([]string{"buildkite-agent", "artifact", "download", needsFile, ".", "--step", contract.BootstrapStepKey}),
			shell.Join([]string{contract.RunnerArtifact, "history", "--needs-file", needsFile, "--out", contract.HistoryDir})}
		return s, nil
	}
	if len(encoded) > maxEnvNeeds {
		return s, fmt.Errorf("the history step's needs are %d KiB, more than its environment carries (%d KiB): generate with --history-needs FILE and upload FILE as an artifact of the generating step", len(encoded)>>10, maxEnvNeeds>>10)
	}
	s.Commands = []string{download, chmod, shell.Join([]string{contract.RunnerArtifact, "history", "--out", contract.HistoryDir})}
	s.Env = map[string]string{contract.HistoryEnv: encoded}
	return s, nil
}

// maxEnvNeeds bounds the needs put into the history step's environment,
// well under Linux's 128 KiB for one environment string.
const maxEnvNeeds = 64 << 10

// historyTimeoutMinutes bounds the history step; `runner history` stops
// its own fetches before it (--timeout) and uploads what it has.
const historyTimeoutMinutes = 15
