package main

import (
	"io"
	"net"

	"github.com/docker/cli/opts"
	"github.com/spf13/pflag"
)

// runOptions holds what `docker run` was given, parsed by docker's own
// option types so values are validated as the real CLI validates them.
type runOptions struct {
	detach, rm, sigProxy, quiet bool
	name, pull                  string
	env, labels, volumes        opts.ListOpts
	publish, devices, groupAdd  opts.ListOpts
	capAdd, securityOpt         opts.ListOpts
	gpus                        opts.GpuOpts
	ulimits                     *opts.UlimitOpt
	shmSize                     opts.MemBytes
	ipc, restart, entrypoint    string
	privileged                  bool
	network                     opts.NetworkOpt
}

// newRunCommand declares every flag of `docker run` (docker/cli
// cli/command/container/run.go and opts.go), with the same names,
// shorthands and value types, in docker's order. Those the stand-in acts
// on are marked supported; the rest parse and validate, then are refused.
func newRunCommand(stderr io.Writer) (*command, *runOptions) {
	c := newCommand("run", "run [OPTIONS] IMAGE [COMMAND] [ARG...]", false, 1, -1, stderr)
	o := &runOptions{
		env:         opts.NewListOpts(opts.ValidateEnv),
		labels:      opts.NewListOpts(opts.ValidateLabel),
		volumes:     opts.NewListOpts(nil),
		publish:     opts.NewListOpts(nil),
		devices:     opts.NewListOpts(nil),
		groupAdd:    opts.NewListOpts(nil),
		capAdd:      opts.NewListOpts(nil),
		securityOpt: opts.NewListOpts(nil),
		ulimits:     opts.NewUlimitOpt(nil),
	}
	f := c.flags
	addRunOwnFlags(f, o)
	// The rest are docker's containerOptions.
	addContainerFlags(f, o)
	addSecurityFlags(f, o)
	addNetworkFlags(f, o)
	addStorageFlags(f, o)
	addHealthFlags(f)
	addResourceFlags(f)
	addNamespaceFlags(f, o)

	c.support("detach", "rm", "name", "env", "label", "volume", "publish", "ulimit", "gpus", "device",
		"ipc", "group-add", "security-opt", "cap-add", "shm-size", "sig-proxy", "pull", "quiet",
		"disable-content-trust", "restart", "network", "net", "privileged", "entrypoint")
	return c, o
}

// listFlag declares a list flag whose values the stand-in only validates.
func listFlag(f *pflag.FlagSet, name, short string, validate func(string) (string, error)) {
	l := opts.NewListOpts(validate)
	f.VarP(&l, name, short, "")
}

// addRunOwnFlags declares run's own flags.
func addRunOwnFlags(f *pflag.FlagSet, o *runOptions) {
	f.BoolVarP(&o.detach, "detach", "d", false, "")
	f.BoolVar(&o.sigProxy, "sig-proxy", true, "")
	f.StringVar(&o.name, "name", "", "")
	f.String("detach-keys", "", "")
	f.StringVar(&o.pull, "pull", "missing", "")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "")
	f.Bool("use-api-socket", false, "")
	f.Bool("help", false, "")
	f.String("platform", "", "")
	f.Bool("disable-content-trust", true, "")
	_ = f.MarkDeprecated("disable-content-trust", "support for docker content trust was removed")
}

// addContainerFlags declares the container's process and identity flags.
func addContainerFlags(f *pflag.FlagSet, o *runOptions) {
	listFlag(f, "attach", "a", nil)
	listFlag(f, "device-cgroup-rule", "", nil)
	f.Var(&o.devices, "device", "")
	f.Var(&o.gpus, "gpus", "")
	f.VarP(&o.env, "env", "e", "")
	listFlag(f, "env-file", "", nil)
	f.StringVar(&o.entrypoint, "entrypoint", "", "")
	f.Var(&o.groupAdd, "group-add", "")
	f.StringP("hostname", "h", "", "")
	f.String("domainname", "", "")
	f.BoolP("interactive", "i", false, "")
	f.VarP(&o.labels, "label", "l", "")
	listFlag(f, "label-file", "", nil)
	f.Bool("read-only", false, "")
	f.StringVar(&o.restart, "restart", "no", "")
	f.String("stop-signal", "", "")
	f.Int("stop-timeout", 0, "")
	f.Var(opts.NewMapOpts(nil, opts.ValidateSysctl), "sysctl", "")
	f.BoolP("tty", "t", false, "")
	f.Var(o.ulimits, "ulimit", "")
	f.StringP("user", "u", "", "")
	f.StringP("workdir", "w", "", "")
	f.BoolVar(&o.rm, "rm", false, "")
}

// addSecurityFlags declares the capability, privilege and namespace-owner
// flags.
func addSecurityFlags(f *pflag.FlagSet, o *runOptions) {
	f.Var(&o.capAdd, "cap-add", "")
	listFlag(f, "cap-drop", "", nil)
	f.BoolVar(&o.privileged, "privileged", false, "")
	f.Var(&o.securityOpt, "security-opt", "")
	f.String("userns", "", "")
	f.String("cgroupns", "", "")
}

// addNetworkFlags declares the network flags.
func addNetworkFlags(f *pflag.FlagSet, o *runOptions) {
	listFlag(f, "add-host", "", opts.ValidateExtraHost)
	listFlag(f, "dns", "", opts.ValidateIPAddress)
	dnsOptions := opts.NewListOpts(nil)
	f.Var(&dnsOptions, "dns-opt", "")
	f.Var(&dnsOptions, "dns-option", "")
	_ = f.MarkHidden("dns-opt")
	listFlag(f, "dns-search", "", opts.ValidateDNSSearch)
	listFlag(f, "expose", "", nil)
	var ip4, ip6 net.IP
	f.IPVar(&ip4, "ip", nil, "")
	f.IPVar(&ip6, "ip6", nil, "")
	listFlag(f, "link", "", opts.ValidateLink)
	listFlag(f, "link-local-ip", "", nil)
	f.String("mac-address", "", "")
	f.VarP(&o.publish, "publish", "p", "")
	f.BoolP("publish-all", "P", false, "")
	f.Var(&o.network, "net", "")
	f.Var(&o.network, "network", "")
	_ = f.MarkHidden("net")
	aliases := opts.NewListOpts(nil)
	f.Var(&aliases, "net-alias", "")
	f.Var(&aliases, "network-alias", "")
	_ = f.MarkHidden("net-alias")
}

// addStorageFlags declares the logging, storage and volume flags.
func addStorageFlags(f *pflag.FlagSet, o *runOptions) {
	f.String("log-driver", "", "")
	f.String("volume-driver", "", "")
	listFlag(f, "log-opt", "", nil)
	listFlag(f, "storage-opt", "", nil)
	listFlag(f, "tmpfs", "", nil)
	listFlag(f, "volumes-from", "", nil)
	f.VarP(&o.volumes, "volume", "v", "")
	var mounts opts.MountOpt
	f.Var(&mounts, "mount", "")
}

// addHealthFlags declares the health check flags.
func addHealthFlags(f *pflag.FlagSet) {
	f.String("health-cmd", "", "")
	f.Duration("health-interval", 0, "")
	f.Int("health-retries", 0, "")
	f.Duration("health-timeout", 0, "")
	f.Duration("health-start-period", 0, "")
	f.Duration("health-start-interval", 0, "")
	f.Bool("no-healthcheck", false, "")
}

// addResourceFlags declares the resource limit flags.
func addResourceFlags(f *pflag.FlagSet) {
	f.Uint16("blkio-weight", 0, "")
	weight := opts.NewWeightdeviceOpt(opts.ValidateWeightDevice)
	f.Var(&weight, "blkio-weight-device", "")
	f.String("cidfile", "", "")
	f.String("cpuset-cpus", "", "")
	f.String("cpuset-mems", "", "")
	f.Int64("cpu-count", 0, "")
	f.Int64("cpu-percent", 0, "")
	f.Int64("cpu-period", 0, "")
	f.Int64("cpu-quota", 0, "")
	f.Int64("cpu-rt-period", 0, "")
	f.Int64("cpu-rt-runtime", 0, "")
	f.Int64P("cpu-shares", "c", 0, "")
	var cpus opts.NanoCPUs
	f.Var(&cpus, "cpus", "")
	for _, name := range []string{"device-read-bps", "device-write-bps"} {
		t := opts.NewThrottledeviceOpt(opts.ValidateThrottleBpsDevice)
		f.Var(&t, name, "")
	}
	for _, name := range []string{"device-read-iops", "device-write-iops"} {
		t := opts.NewThrottledeviceOpt(opts.ValidateThrottleIOpsDevice)
		f.Var(&t, name, "")
	}
	var ioMax, memory, memoryReservation opts.MemBytes
	f.Var(&ioMax, "io-maxbandwidth", "")
	f.Uint64("io-maxiops", 0, "")
	f.VarP(&memory, "memory", "m", "")
	f.Var(&memoryReservation, "memory-reservation", "")
	var memorySwap opts.MemSwapBytes
	f.Var(&memorySwap, "memory-swap", "")
	f.Int64("memory-swappiness", -1, "")
	f.Bool("oom-kill-disable", false, "")
	f.Int("oom-score-adj", 0, "")
	f.Int64("pids-limit", 0, "")
}

// addNamespaceFlags declares the cgroup, IPC, PID, UTS and runtime flags.
func addNamespaceFlags(f *pflag.FlagSet, o *runOptions) {
	f.String("cgroup-parent", "", "")
	f.StringVar(&o.ipc, "ipc", "", "")
	f.String("isolation", "", "")
	f.String("pid", "", "")
	f.Var(&o.shmSize, "shm-size", "")
	f.String("uts", "", "")
	f.String("runtime", "", "")
	f.Bool("init", false, "")
	f.Var(opts.NewMapOpts(nil, nil), "annotation", "")
	var kernelMemory opts.MemBytes
	f.Var(&kernelMemory, "kernel-memory", "")
	_ = f.MarkDeprecated("kernel-memory", "and no longer supported by the kernel")
}
