package job

import (
	"os"

	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
)

// bashrcScript is what `bash -ic` runs: the interactive shell has sourced
// the image's /root/.bashrc (oneAPI's environment) by then, and exec
// hands the process to vLLM. The serve arguments arrive as "$@", bash's
// positional parameters, so no recipe text is ever parsed by the shell.
const bashrcScript = `exec vllm serve "$@"`

// bashrcArgv0 is $0 of that script, the name bash reports errors under.
const bashrcArgv0 = "vllm-serve"

// hostPathExists is the host check for bind_if_present; tests replace it.
var hostPathExists = func(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// variantFlags are the docker run flags of the profile's container
// variant that depend on the host: paths mounted when present, variables
// passed by name when the job has them. passed holds their values, for
// docker's own environment.
func (j *Job) variantFlags() (flags []string, passed []childenv.Var) {
	v := j.res.Profile.Docker
	if v == nil {
		return nil, nil
	}
	for _, p := range v.BindIfPresent {
		if hostPathExists(p) {
			flags = append(flags, "-v", p+":"+p)
		}
	}
	for _, name := range v.PassEnv {
		if val, ok := proc.LookupEnv(j.environ, name); ok {
			flags = append(flags, "-e", name)
			passed = append(passed, childenv.Var{Name: name, Value: val})
		}
	}
	return flags, passed
}

// containerCommand is the end of `docker run`: the network flags, the
// image and what it runs. On the host's network the server binds the
// host's loopback and nothing is published; otherwise it binds the
// container's interfaces and the port is published on the host's
// loopback only.
func (j *Job) containerCommand(image, port string, serveArgs []string) []string {
	v := j.res.Profile.Docker
	var argv []string
	host := "0.0.0.0"
	if v != nil && v.HostNetwork {
		host = loopback
	} else {
		argv = append(argv, "-p", loopback+":"+port+":"+port)
	}
	// The container starts held at its gate (startGate), which the
	// runner opens once pytest is in the container's Python; then the
	// gate's shell becomes what the image's entrypoint, `vllm serve`,
	// would have run.
	name := containerName(j.res, j.getenv)
	argv = append(argv, "--entrypoint", "sh", image, "-c", startGate, startGateArgv0, startGateFile(name))
	if v != nil && v.Bashrc {
		argv = append(argv, "bash", "-ic", bashrcScript, bashrcArgv0)
	} else {
		argv = append(argv, "vllm", "serve")
	}
	argv = append(argv, serveArgs...)
	return append(argv, "--host", host)
}
