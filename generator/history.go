package main

import (
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
func historyStep(sel *selection.Selection, queue string) steps.CommandStep {
	return steps.CommandStep{
		Label: ":card_file_box: history",
		Key:   contract.HistoryStepKey,
		Commands: []string{
			shell.Join([]string{"buildkite-agent", "artifact", "download", contract.RunnerArtifact, ".", "--step", contract.BootstrapStepKey}),
			shell.Join([]string{"chmod", "+x", contract.RunnerArtifact}),
			shell.Join([]string{contract.RunnerArtifact, "history", "--out", contract.HistoryDir}),
		},
		Env:              map[string]string{contract.HistoryEnv: contract.EncodeNeeds(needs.Of(sel))},
		Agents:           cpuAgents(queue),
		TimeoutInMinutes: historyTimeoutMinutes,
		ArtifactPaths:    []string{contract.ArtifactGlob(contract.HistoryDir)},
	}
}

// historyTimeoutMinutes bounds the history step; `runner history` stops
// its own fetches before it (--timeout) and uploads what it has.
const historyTimeoutMinutes = 15
