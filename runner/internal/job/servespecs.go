package job

import (
	"strconv"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/runner/internal/childenv"
	"github.com/benchkite/benchkite/runner/internal/proc"
)

// serveSpecs are the commands that start the server: one for native, two
// for docker (`docker run -d`, then `docker logs -f` to stream and to
// notice the container ending).
//
// Natively the server binds loopback. In a container it must bind the
// container's interfaces for the published port to reach it, and the port
// is published on the host's loopback only.
func (j *Job) serveSpecs() ([]proc.Spec, error) {
	res := j.res
	serveArgv := res.ServeArgv(j.port)
	if res.Profile.Runtime != agents.Docker {
		env, err := j.env(childenv.Server, j.readyTimeoutVars()...)
		if err != nil {
			return nil, err
		}
		return []proc.Spec{{Argv: append(serveArgv, "--host", loopback), Env: env, Confine: j.modelCode()}}, nil
	}
	name := containerName(res, j.getenv)
	argv := []string{"docker", "run", "-d", "--rm", "--name", name}
	// Labels find this recipe's containers left by a killed job.
	for _, l := range containerLabels(res, j.getenv, j.identity) {
		argv = append(argv, "--label", l)
	}
	argv = append(argv, res.Profile.DockerRunFlags()...)
	// A secret goes by name only, its value in docker's own environment,
	// so that it is on no command line and in no log.
	var secrets []childenv.Var
	for _, e := range j.recipeEnv() {
		if err := childenv.CheckRecipe(e.Name); err != nil {
			return nil, err
		}
		if proc.IsSecretName(e.Name) {
			argv = append(argv, "-e", e.Name)
			secrets = append(secrets, e)
			continue
		}
		argv = append(argv, "-e", e.Name+"="+e.Value)
	}
	for _, ready := range j.readyTimeoutVars() {
		argv = append(argv, "-e", ready.Name+"="+ready.Value)
	}
	// Name only: docker copies the value from its own environment, so the
	// token is never on a command line or in a log.
	argv = append(argv, j.hfTokenFlags()...)
	hf := res.Profile.HFCacheDir()
	if res.Profile.HFHome != "" {
		argv = append(argv, "-v", hf+":"+hf)
	} else {
		argv = append(argv, "-v", "benchkite-hf-cache:"+hf)
	}
	for _, d := range j.containerDirs() {
		argv = append(argv, "-v", d+":"+d)
	}
	port := strconv.Itoa(j.port)
	image := res.PullImage
	if image == "" {
		image = res.Image.Image
	}
	variant, passed := j.variantFlags()
	argv = append(argv, variant...)
	argv = append(argv, j.containerCommand(image, port, serveArgv[2:])...)
	runEnv, err := j.env(childenv.DockerServer, append(secrets, passed...)...)
	if err != nil {
		return nil, err
	}
	logsEnv, err := j.env(childenv.Docker)
	if err != nil {
		return nil, err
	}
	return []proc.Spec{
		{Argv: argv, Env: runEnv},
		{Argv: []string{"docker", "logs", "-f", name}, Env: logsEnv},
	}, nil
}

// containerDirs are the results folders a container writes into, each
// mounted at its own path: the bench's and each aiperf config's, which run
// inside it (docker exec) and write their results there. The rest of the
// results directory (lm_eval's, BFCL's, the summary) is out of the
// container's reach.
func (j *Job) containerDirs() []string {
	dirs := []string{j.benchDir()}
	if a := j.res.Recipe.AIPerf; a != nil {
		for _, c := range a.Configs {
			dirs = append(dirs, j.aiperfDir(c))
		}
	}
	return dirs
}

// hfTokenFlags pass the Hugging Face tokens into a container by name, for
// the tokens the job has.
func (j *Job) hfTokenFlags() []string {
	var flags []string
	for _, secret := range []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"} {
		if j.getenv(secret) != "" {
			flags = append(flags, "-e", secret)
		}
	}
	return flags
}
