package job

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/tools"
)

// unknownVersion is what the fingerprint records of a tool from PATH
// whose version its interpreter cannot tell.
const unknownVersion = "unknown"

// versionScript prints "name version" for each distribution named in
// argv, "name unknown" for one its interpreter does not have.
const versionScript = `import sys
from importlib.metadata import version, PackageNotFoundError
for name in sys.argv[1:]:
    try:
        print(name, version(name))
    except PackageNotFoundError:
        print(name, "` + unknownVersion + `")
`

// wantedTools are the distributions this run uses.
func (j *Job) wantedTools() []string {
	var names []string
	for _, p := range tools.Pinned(j.res.BFCL != nil) {
		if p.Name == tools.LMEval.Name && len(j.res.Tasks) == 0 {
			continue
		}
		if p.Name != tools.Soundfile.Name {
			names = append(names, p.Name)
		}
	}
	return names
}

// versionSpec asks the interpreter lm_eval runs on (its script's "#!"
// line; else the BFCL driver's Python, else python3 from PATH) which
// versions of the tools it has: with --tools path nothing was installed,
// and the fingerprint must say what ran, not what is pinned.
func (j *Job) versionSpec() (proc.Spec, error) {
	tl := j.expectedTools()
	python := tl.Python
	if python == "" {
		python = "python3"
	}
	if interp := scriptInterpreter(tl.LMEval); interp != "" && len(j.res.Tasks) > 0 {
		python = interp
	}
	env, err := j.env(childenv.LMEval, tl.Env...)
	argv := append([]string{python, "-c", versionScript}, j.wantedTools()...)
	return proc.Spec{Argv: argv, Env: env}, err
}

// scriptInterpreter is the absolute interpreter of a "#!" script, or ""
// when path is not one (a binary, a stand-in, not found).
func scriptInterpreter(path string) string {
	if !filepath.IsAbs(path) {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 512)).ReadString('\n')
	if err != nil {
		return ""
	}
	interp, ok := strings.CutPrefix(strings.TrimSpace(line), "#!")
	if !ok {
		return ""
	}
	fields := strings.Fields(interp)
	if len(fields) != 1 || !filepath.IsAbs(fields[0]) {
		return "" // "/usr/bin/env python3" and the like: PATH decides
	}
	return fields[0]
}

// pathVersions runs versionSpec and returns what it printed; a tool it
// could not ask about is unknown, with the reason logged.
func (j *Job) pathVersions(ctx context.Context) map[string]string {
	out := map[string]string{}
	for _, n := range j.wantedTools() {
		out[n] = unknownVersion
	}
	spec, err := j.versionSpec()
	if err != nil {
		fmt.Fprintf(j.log, "runner: tool versions not known: %v\n", err)
		return out
	}
	var stdout strings.Builder
	spec.Stdout, spec.Stderr = &stdout, io.Discard
	fmt.Fprintf(j.log, "$ %s\n", proc.FormatArgv(spec.Argv))
	if err := j.procs.Run(ctx, spec); err != nil {
		fmt.Fprintf(j.log, "runner: tool versions not known: %v\n", err)
		return out
	}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if name, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			if _, want := out[name]; want && v != "" {
				out[name] = v
			}
		}
	}
	return out
}
