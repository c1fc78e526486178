package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// imagePath is the PATH of the vLLM image; the stand-in's own directory,
// which holds the stand-in vllm, comes first.
const imagePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// runErr is how `docker run` reports a failure after parsing its flags.
func runErr(err error) error {
	var ce *cliError
	if errors.As(err, &ce) {
		return ce
	}
	return &cliError{msg: fmt.Sprintf("docker: %v\n\nRun 'docker run --help' for more information", err), code: 125}
}

// runDaemonErr is a daemon refusal as `docker run` shows it.
func runDaemonErr(format string, a ...any) error {
	return runErr(errors.New("Error response from daemon: " + fmt.Sprintf(format, a...)))
}

// stubErr is what the stand-in cannot emulate.
func stubErr(format string, a ...any) error {
	return &cliError{msg: "fake docker: " + fmt.Sprintf(format, a...), code: 125}
}

func (d *daemon) run(args []string) error {
	c, o := newRunCommand(d.stderr)
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	req, err := checkRunClient(o, pos[0], pos[1:])
	if err != nil {
		return err
	}
	if err := d.checkRunDaemon(o, req); err != nil {
		return err
	}
	mode, err := d.checkServerReachable(o, req)
	if err != nil {
		return err
	}
	st, err := d.store()
	if err != nil {
		return err
	}
	if err := ensureImage(st, o.pull, req.image); err != nil {
		return err
	}
	ctr := d.newContainer(o, req, mode)
	if err := d.createAndStart(st, ctr); err != nil {
		return err
	}
	fmt.Fprintln(d.stdout, ctr.ID)
	return nil
}

// runRequest is a `docker run` the client's checks passed: the image, the
// command after it and the flag values parsed into what the daemon needs.
type runRequest struct {
	image       string
	args        []string
	ports       []portBinding
	hostDevices []string
	volumes     []volume
}

// checkRunClient makes the client's checks (parse in docker/cli opts.go),
// in the client's order.
func checkRunClient(o *runOptions, image string, args []string) (*runRequest, error) {
	req := &runRequest{image: image, args: args}
	switch o.pull {
	case "always", "missing", "never":
	default:
		return nil, runErr(fmt.Errorf(`invalid pull option: '%s': must be one of "always", "missing" or "never"`, o.pull))
	}
	ports, err := publishSpecs(o.publish.GetSlice())
	if err != nil {
		return nil, runErr(err)
	}
	req.ports = ports
	for _, dev := range o.devices.GetSlice() {
		host, err := parseDevice(dev)
		if err != nil {
			return nil, runErr(err)
		}
		req.hostDevices = append(req.hostDevices, host)
	}
	if err := checkSecurityOpts(o.securityOpt.GetSlice()); err != nil {
		return nil, runErr(err)
	}
	if err := checkRunMode(o); err != nil {
		return nil, err
	}
	for _, spec := range o.volumes.GetSlice() {
		v, err := parseVolume(spec)
		if err != nil {
			return nil, runErr(err)
		}
		req.volumes = append(req.volumes, v)
	}
	if err := checkImage(image); err != nil {
		return nil, runErr(err)
	}
	return req, nil
}

// checkRunMode refuses --restart with --rm, as docker does, and the run
// modes the stand-in does not emulate: a restart policy, attached runs.
func checkRunMode(o *runOptions) error {
	if o.rm && o.restart != "no" && o.restart != "" {
		return runErr(errors.New("conflicting options: cannot specify both --restart and --rm"))
	}
	if o.restart != "no" && o.restart != "" {
		return stubErr("--restart %s is not emulated", o.restart)
	}
	if !o.detach {
		return stubErr("docker run without -d (attached) is not emulated")
	}
	return nil
}

// checkRunDaemon makes the daemon's checks of the container's name, IPC
// mode, security options, capabilities, devices and binds.
func (d *daemon) checkRunDaemon(o *runOptions, req *runRequest) error {
	if o.name != "" && !containerNamRE.MatchString(o.name) {
		return runDaemonErr("Invalid container name (%s), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed", o.name)
	}
	if !validIPC(o.ipc) {
		return runDaemonErr("invalid IPC mode: %s", o.ipc)
	}
	for _, opt := range o.securityOpt.GetSlice() {
		if err := daemonSecurityOpt(opt); err != nil {
			return runDaemonErr("%v", err)
		}
	}
	for _, cp := range o.capAdd.GetSlice() {
		if err := checkCap(cp); err != nil {
			return runDaemonErr("%v", err)
		}
	}
	for _, host := range req.hostDevices {
		if _, err := os.Stat(d.hostDevice(host)); err != nil {
			return runDaemonErr("error gathering device information while adding custom device %q: no such file or directory", host)
		}
	}
	for _, v := range req.volumes {
		if v.bind && v.source != v.target {
			return stubErr("-v %s:%s: containers run on the host's filesystem, so only binds of a path onto itself are emulated", v.source, v.target)
		}
	}
	return nil
}

// checkServerReachable returns the network mode and refuses a server the
// stand-in could not reach as docker would. The stand-in server listens on
// the host's loopback at its --port: that is only what docker would give
// when the port is published on the same host port, to an address
// loopback reaches, or when the container shares the host's network.
func (d *daemon) checkServerReachable(o *runOptions, req *runRequest) (string, error) {
	mode := o.network.NetworkMode()
	switch mode {
	case "default", "bridge", "host":
	default:
		return "", stubErr("--network %s is not emulated (only the default bridge and host)", mode)
	}
	port, host := serverAddr(req.args)
	if mode != "host" {
		if host != "" && host != "0.0.0.0" && host != "::" {
			return "", stubErr("the server binds %s inside the container, which no published port reaches; the stand-in does not emulate an unreachable server", host)
		}
		if !publishedOnLoopback(req.ports, port) {
			return "", stubErr("the server's port %s/tcp is not published as 127.0.0.1:%[1]s:%[1]s; the stand-in only emulates a server published on the same loopback port", port)
		}
		return mode, nil
	}
	if len(req.ports) > 0 {
		// The daemon's warning (moby daemon/create.go); the ports are
		// dropped, the container is still created.
		fmt.Fprintln(d.stderr, "WARNING: Published ports are discarded when using host network mode")
		req.ports = nil
	}
	if host != "" && host != "0.0.0.0" && host != "::" && host != "127.0.0.1" && host != "localhost" {
		return "", stubErr("the server binds %s on the host's network; the stand-in only emulates loopback or every interface", host)
	}
	return mode, nil
}

// ensureImage applies --pull: never needs the image present; otherwise an
// image not built or pulled before is pulled now.
func ensureImage(st *store, pull, image string) error {
	if pull == "never" {
		if _, ok := st.findImage(image); !ok {
			return runErr(fmt.Errorf("Error response from daemon: No such image: %s", image))
		}
		return nil
	}
	if err := st.pulled(image); err != nil {
		return runErr(err)
	}
	return nil
}

// newContainer is the container the request describes, not yet created.
func (d *daemon) newContainer(o *runOptions, req *runRequest, mode string) *container {
	entrypoint := []string{"vllm", "serve"}
	if o.entrypoint != "" {
		// docker takes --entrypoint as one program name, no arguments;
		// what follows the image is its command.
		entrypoint = []string{o.entrypoint}
	}
	labels := map[string]string{}
	for _, l := range o.labels.GetSlice() {
		k, v, _ := strings.Cut(l, "=")
		labels[k] = v
	}
	ctr := &container{
		ID: newID(), Name: o.name, Image: req.image,
		Entrypoint: entrypoint, Args: req.args, Privileged: o.privileged, NetworkMode: mode,
		Labels: labels, Ports: req.ports, AutoRemove: o.rm, StopTimeout: 10, Created: time.Now(),
	}
	if ctr.Name == "" {
		ctr.Name = "fake_" + shortID(ctr.ID)
	}
	ctr.Env = d.containerEnv(ctr, o.env.GetSlice())
	for _, v := range req.volumes {
		ctr.Mounts = append(ctr.Mounts, v.target)
	}
	if wd, err := os.Getwd(); err == nil {
		ctr.HostDir = wd
	}
	return ctr
}

// createAndStart creates the container and starts it, removing it again
// when its ports are taken or it does not start.
func (d *daemon) createAndStart(st *store, ctr *container) error {
	if err := st.create(ctr); err != nil {
		return err
	}
	if err := checkPorts(st, ctr); err != nil {
		st.remove(ctr.ID)
		return err
	}
	if err := d.start(st, ctr); err != nil {
		st.remove(ctr.ID)
		return err
	}
	return nil
}

// serverAddr is the --port (default 8000) and --host of `vllm serve` ARGS.
func serverAddr(args []string) (port, host string) {
	port = "8000"
	for i, a := range args {
		for _, flag := range []string{"--port", "--host"} {
			val, ok := "", false
			if a == flag && i+1 < len(args) {
				val, ok = args[i+1], true
			} else if v, found := strings.CutPrefix(a, flag+"="); found {
				val, ok = v, true
			}
			if !ok {
				continue
			}
			if flag == "--port" {
				port = val
			} else {
				host = val
			}
		}
	}
	return port, host
}

func publishedOnLoopback(ports []portBinding, port string) bool {
	for _, p := range ports {
		if p.ContainerPort == port+"/tcp" && p.HostPort == port && (p.HostIP == "" || p.HostIP == "0.0.0.0" || p.HostIP == "127.0.0.1" || p.HostIP == "::") {
			return true
		}
	}
	return false
}

// containerEnv is the image's environment (PATH, with FAKE_DOCKER_IMAGE_PATH
// first, HOME, HOSTNAME and the
// variables FAKE_DOCKER_IMAGE_ENV names) overridden by -e values, which
// the client has already resolved: a bare NAME was replaced by NAME=value
// from docker's environment if it is set there, and is dropped otherwise.
func (d *daemon) containerEnv(ctr *container, env []string) []string {
	self, _ := os.Executable()
	path := filepath.Dir(self) + ":" + imagePath
	if dirs := d.getenv(imagePathEnv); dirs != "" {
		path = dirs + ":" + path
	}
	out := []string{
		"PATH=" + path,
		"HOME=" + d.getenv("HOME"),
		"HOSTNAME=" + shortID(ctr.ID),
	}
	for _, name := range strings.Split(d.getenv(imageEnvEnv), ",") {
		if name = strings.TrimSpace(name); name != "" {
			out = setEnv(out, name+"="+d.getenv(name))
		}
	}
	for _, kv := range env {
		if strings.Contains(kv, "=") {
			out = setEnv(out, kv)
		}
	}
	return out
}

// setEnv sets NAME=value in env, replacing an earlier NAME.
func setEnv(env []string, kv string) []string {
	name, _, _ := strings.Cut(kv, "=")
	out := slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") })
	return append(out, kv)
}

// create reserves the name and writes the container's config.
func (s *store) create(ctr *container) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	for _, other := range s.all() {
		if other.Name == ctr.Name {
			return runDaemonErr("Conflict. The container name \"/%s\" is already in use by container \"%s\". You have to remove (or rename) that container to be able to reuse that name.", ctr.Name, other.ID)
		}
	}
	dir := s.dir(ctr.ID)
	if err := os.MkdirAll(filepath.Join(dir, "rootfs"), 0o755); err != nil {
		return fmt.Errorf("fake docker: %w", err)
	}
	if err := s.writeStatus(ctr.ID, status{}); err != nil {
		return fmt.Errorf("fake docker: %w", err)
	}
	return writeJSON(filepath.Join(dir, "config.json"), ctr)
}

func (s *store) remove(id string) {
	unlock, err := s.lock()
	if err == nil {
		defer unlock()
	}
	os.RemoveAll(s.dir(id))
}

// checkPorts refuses a host port another container publishes or that
// something on the host already holds, as docker's port allocator and
// proxy do.
func checkPorts(st *store, ctr *container) error {
	for _, p := range ctr.Ports {
		if p.HostPort == "" {
			continue
		}
		for _, other := range st.all() {
			if other.ID == ctr.ID || !st.status(other.ID).Running {
				continue
			}
			for _, q := range other.Ports {
				if q.HostPort == p.HostPort && strings.HasSuffix(q.ContainerPort, protoOf(p.ContainerPort)) {
					return runDaemonErr("failed to set up container networking: driver failed programming external connectivity on endpoint %s (%s): Bind for %s:%s failed: port is already allocated", ctr.Name, ctr.ID, orAll(p.HostIP), p.HostPort)
				}
			}
		}
		if protoOf(p.ContainerPort) != "/tcp" {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(orAll(p.HostIP), p.HostPort))
		if err != nil {
			return runDaemonErr("failed to set up container networking: driver failed programming external connectivity on endpoint %s (%s): failed to bind host port %s:%s/tcp: address already in use", ctr.Name, ctr.ID, orAll(p.HostIP), p.HostPort)
		}
		l.Close()
	}
	return nil
}

func protoOf(containerPort string) string {
	if i := strings.LastIndexByte(containerPort, '/'); i >= 0 {
		return containerPort[i:]
	}
	return "/tcp"
}

func orAll(ip string) string {
	if ip == "" {
		return "0.0.0.0"
	}
	return ip
}

// start launches the container's supervisor in a session of its own and
// waits until it says the entrypoint runs.
func (d *daemon) start(st *store, ctr *container) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("fake docker: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("fake docker: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(self, "container", ctr.ID)
	cmd.Env = append(shimEnv(ctr.Env), internalEnv+"=container", stateEnv+"="+st.root)
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("fake docker: start the container's supervisor: %w", err)
	}
	w.Close()
	line, _ := bufio.NewReader(r).ReadString('\n')
	_ = cmd.Process.Release()
	if msg, failed := strings.CutPrefix(strings.TrimSpace(line), "error: "); failed {
		return runDaemonErr("%s", msg)
	}
	if strings.TrimSpace(line) != "ok" {
		return stubErr("the container's supervisor ended without starting it")
	}
	return nil
}

// shimEnv is the supervisors' environment: the container's, without the
// stand-ins' start log (the supervisor is the daemon, not a start of
// docker).
func shimEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(e string) bool { return strings.HasPrefix(e, "FAKE_EXEC_LOG=") })
}

// devRootEnv names a directory standing for the host's /dev, for devices
// (such as /dev/dri) the test machine lacks.
const devRootEnv = "FAKE_DOCKER_DEV_ROOT"

// hostDevice is where the host's device path is found.
func (d *daemon) hostDevice(p string) string {
	root := d.getenv(devRootEnv)
	if rest, ok := strings.CutPrefix(p, "/dev/"); ok && root != "" {
		return filepath.Join(root, rest)
	}
	return p
}
