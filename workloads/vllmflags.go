package workloads

import (
	_ "embed"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/benchkite/benchkite/internal/strictyaml"
)

// vllmServeFlagsText is every long flag `vllm serve` takes in one vLLM
// release, generated from vLLM's own argument definitions by
// vllmflags/gen_serve_flags.py (`make vllm-flags`).
//
//go:embed vllm_serve_flags.txt
var vllmServeFlagsText string

var vllmServeFlags, VLLMFlagsVersion = parseFlagTable(vllmServeFlagsText)

var flagTableVersionRE = regexp.MustCompile(`^# vllm serve long flags of vLLM (\S+),`)

// parseFlagTable reads the table: comment lines, then one flag a line.
func parseFlagTable(text string) (flags []string, version string) {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if m := flagTableVersionRE.FindStringSubmatch(line); m != nil {
			version = m[1]
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		flags = append(flags, line)
	}
	slices.Sort(flags)
	return flags, version
}

// serveFlagProblem says what is wrong with a long serve flag (the name,
// without =value or dotted sub-keys) by the table: an error for a near miss
// of a known flag, a warning for an abbreviation or a flag the table does
// not have (the image's vLLM may be newer than the table's).
func serveFlagProblem(flag string) (msg string, isErr bool) {
	if !strings.HasPrefix(flag, "--") {
		return "", false
	}
	if full, ok := VLLMServeFlag(flag); ok {
		if full == flag {
			return "", false
		}
		return fmt.Sprintf("vllm.serve_args: %s abbreviates %s: vLLM's argparse reads a unique prefix as the flag, which a newer flag can make ambiguous; write it in full", flag, full), false
	}
	if near := nearFlags(flag); len(near) > 0 {
		return fmt.Sprintf("vllm.serve_args: %s is not a vllm serve flag (vLLM %s); did you mean %s?", flag, VLLMFlagsVersion, strings.Join(near, " or ")), true
	}
	return fmt.Sprintf("vllm.serve_args: %s is not a vllm serve flag in vLLM %s (workloads/vllm_serve_flags.txt); vLLM refuses unknown flags, so the server will not start unless the image's vLLM is newer and has it", flag, VLLMFlagsVersion), false
}

// nearFlags are the known flags a typo of flag would be: at most two edits
// away, for names long enough that two edits are a slip rather than another
// word.
func nearFlags(flag string) []string {
	name := strings.TrimPrefix(flag, "--")
	limit := 2
	if len(name) < 8 {
		limit = 1
	}
	best, out := limit+1, []string(nil)
	for _, f := range vllmServeFlags {
		d := strictyaml.Distance(name, strings.TrimPrefix(f, "--"))
		switch {
		case d < best:
			best, out = d, []string{f}
		case d == best:
			out = append(out, f)
		}
	}
	if best > limit {
		return nil
	}
	return out
}

// VLLMServeFlag resolves a long flag name (no value, no dotted sub-key) the
// way vLLM's parser does: the flag itself, or the one table flag it is a
// unique prefix of. ok is false for a flag vLLM would refuse.
func VLLMServeFlag(flag string) (name string, ok bool) {
	if _, known := slices.BinarySearch(vllmServeFlags, flag); known {
		return flag, true
	}
	for _, f := range vllmServeFlags {
		if strings.HasPrefix(f, flag) {
			if ok {
				return "", false
			}
			name, ok = f, true
		}
	}
	return name, ok
}
