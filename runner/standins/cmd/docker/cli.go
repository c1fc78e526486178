package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// command is one docker subcommand: its usage line as the real CLI
// prints it, its flags and how many arguments it takes.
type command struct {
	name      string
	use       string // after "docker "
	flags     *pflag.FlagSet
	supported map[string]bool // flags the stand-in acts on
	minArgs   int
	maxArgs   int // -1: no limit
}

// newCommand: with interspersed false, flags end at the first argument
// (run and exec, whose arguments are a command line).
func newCommand(name, use string, interspersed bool, minArgs, maxArgs int, stderr io.Writer) *command {
	fs := pflag.NewFlagSet("docker "+name, pflag.ContinueOnError)
	fs.SetOutput(stderr) // deprecation notices, as docker prints them
	fs.Usage = func() {}
	fs.SetInterspersed(interspersed)
	return &command{name: name, use: use, flags: fs, supported: map[string]bool{}, minArgs: minArgs, maxArgs: maxArgs}
}

// support marks flags the stand-in emulates; every other real flag is
// parsed and validated, then refused.
func (c *command) support(names ...string) {
	for _, n := range names {
		c.supported[n] = true
	}
}

// parse parses args as docker does and returns the positional arguments.
func (c *command) parse(args []string) ([]string, error) {
	// The root command's --help (and its deprecated -h), on every
	// command but run, whose -h is --hostname.
	if c.flags.Lookup("help") == nil {
		c.flags.BoolP("help", "h", false, "Print usage")
		_ = c.flags.MarkShorthandDeprecated("help", "use --help")
		c.flags.Lookup("help").Hidden = true
	}
	if err := c.flags.Parse(args); err != nil {
		return nil, &cliError{msg: fmt.Sprintf("%s\n\nUsage:  docker %s\n\nRun 'docker %s --help' for more information", err, c.use, c.name), code: 125}
	}
	var bad error
	c.flags.Visit(func(f *pflag.Flag) {
		if bad == nil && !c.supported[f.Name] {
			bad = &cliError{msg: fmt.Sprintf("fake docker: docker %s --%s is a real option, but this stand-in does not emulate it", c.name, f.Name), code: 125}
		}
	})
	if bad != nil {
		return nil, bad
	}
	pos := c.flags.Args()
	switch {
	case c.maxArgs > 0 && c.maxArgs == c.minArgs:
		if len(pos) != c.minArgs {
			return nil, &cliError{msg: fmt.Sprintf("docker: 'docker %s' requires %d %s\n\nUsage:  docker %s\n\nRun 'docker %s --help' for more information", c.name, c.minArgs, plural("argument", c.minArgs), c.use, c.name), code: 1}
		}
	case len(pos) < c.minArgs:
		return nil, &cliError{msg: fmt.Sprintf("docker: 'docker %s' requires at least %d %s\n\nUsage:  docker %s\n\nSee 'docker %s --help' for more information", c.name, c.minArgs, plural("argument", c.minArgs), c.use, c.name), code: 1}
	case c.maxArgs == 0 && len(pos) > 0:
		return nil, &cliError{msg: fmt.Sprintf("docker: 'docker %s' accepts no arguments\n\nUsage:  docker %s\n\nRun 'docker %s --help' for more information", c.name, c.use, c.name), code: 1}
	}
	return pos, nil
}

func plural(word string, n int) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// Real docker commands the stand-in does not emulate, to tell them from
// typing errors.
var otherCommands = strings.Fields(`attach build builder buildx checkpoint commit compose config container context cp create
	diff events export history image images import info kill load login logout manifest network node pause plugin port
	pull push rename restart rmi save search secret service stack start stats swarm system tag top trust unpause update
	version volume wait`)
