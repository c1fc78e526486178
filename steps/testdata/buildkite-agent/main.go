// Command buildkite-agent builds the real Buildkite agent CLI from its
// published module, so tests can feed generated pipelines to
// "buildkite-agent pipeline upload --dry-run" without a network or an
// installed agent.
package main

import (
	"fmt"
	"os"

	"github.com/buildkite/agent/v3/clicommand"
	"github.com/buildkite/agent/v3/version"
	"github.com/urfave/cli"
)

func main() {
	app := cli.NewApp()
	app.Name = "buildkite-agent"
	app.Usage = "the Buildkite agent, built for benchkite's tests"
	app.Version = version.Version()
	app.Commands = clicommand.BuildkiteAgentCommands
	app.ErrWriter = os.Stderr
	app.CommandNotFound = func(c *cli.Context, name string) {
		fmt.Fprintf(c.App.ErrWriter, "buildkite-agent: unknown subcommand %q\n", name)
		os.Exit(1)
	}
	if err := app.Run(os.Args); err != nil {
		os.Exit(clicommand.PrintMessageAndReturnExitCode(err))
	}
}
