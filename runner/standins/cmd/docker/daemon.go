package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// daemon runs one docker command against the state directory.
type daemon struct {
	getenv         func(string) string
	stdin          io.Reader // what exec -i forwards
	stdout, stderr io.Writer
}

func newDaemon(getenv func(string) string, stdout, stderr io.Writer) *daemon {
	return &daemon{getenv: getenv, stdout: stdout, stderr: stderr}
}

// main runs docker's argv (without the program name) and returns the exit
// status.
func (d *daemon) main(args []string) int {
	return report(d.stderr, d.dispatch(args))
}

func (d *daemon) dispatch(args []string) error {
	if len(args) == 0 {
		return &cliError{msg: "fake docker: usage: docker COMMAND; the stand-in emulates run, exec, logs, stop, rm, ps and inspect", code: 1}
	}
	if strings.HasPrefix(args[0], "-") {
		return &cliError{msg: fmt.Sprintf("fake docker: global option %s is not emulated (options go after the command)", args[0]), code: 125}
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "run":
		return d.run(rest)
	case "exec":
		return d.exec(rest)
	case "logs":
		return d.logs(rest)
	case "stop":
		return d.stop(rest)
	case "rm":
		return d.rm(rest)
	case "ps":
		return d.ps(rest)
	case "inspect":
		return d.inspect(rest)
	case "build":
		return d.build(rest)
	case "image":
		return d.imageCmd(rest)
	}
	if slices.Contains(otherCommands, cmd) {
		return &cliError{msg: fmt.Sprintf("fake docker: docker %s is a real command, but this stand-in does not emulate it", cmd), code: 1}
	}
	return &cliError{msg: fmt.Sprintf("docker: unknown command: docker %s\n\nRun 'docker --help' for more information", cmd), code: 1}
}

func (d *daemon) store() (*store, error) { return newStore(d.getenv) }
