package main

import (
	_ "embed"
	"slices"
	"strings"
)

// serveFlagsText is every long flag `vllm serve` takes in the vLLM release
// the project pins: a copy of the product's table
// (workloads/vllm_serve_flags.txt, written by `make vllm-flags` with this
// one), so the stand-in refuses what that release refuses without linking
// the product's recipe code. TestServeFlagsMatchProduct keeps the two equal.
//
//go:embed serve_flags.txt
var serveFlagsText string

// serveFlags is the table's flags, sorted.
var serveFlags = readServeFlags(serveFlagsText)

// readServeFlags takes the flag lines of the table, skipping comments and
// blank lines.
func readServeFlags(text string) []string {
	var flags []string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "#") {
			flags = append(flags, line)
		}
	}
	slices.Sort(flags)
	return flags
}

// lookupServeFlag resolves a long flag name (no value, no dotted sub-key)
// as vLLM's argparse does: the flag itself, or the one flag of the table it
// is a unique prefix of. ok is false for a flag vLLM would refuse.
func lookupServeFlag(flag string) (name string, ok bool) {
	if _, found := slices.BinarySearch(serveFlags, flag); found {
		return flag, true
	}
	for _, f := range serveFlags {
		if !strings.HasPrefix(f, flag) {
			continue
		}
		if ok {
			return "", false
		}
		name, ok = f, true
	}
	return name, ok
}
