package main

import (
	"fmt"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/distribution/reference"
	"github.com/docker/go-connections/nat"
)

// What the real client and daemon check of the values that reach them;
// the rules and messages are docker's (docker/cli opts.go, moby).

// publishSpecs turns -p values into bindings: the long form
// (published=,target=,protocol=) becomes the short one, then the short
// form ([ip:]public:private[/proto]) is parsed by docker's own parser.
func publishSpecs(values []string) ([]portBinding, error) {
	var short []string
	for _, v := range values {
		if !strings.Contains(v, "=") {
			short = append(short, v)
			continue
		}
		params := map[string]string{"protocol": "tcp"}
		for _, p := range strings.Split(v, ",") {
			k, val, ok := strings.Cut(p, "=")
			if !ok || k == "" {
				return nil, fmt.Errorf("invalid publish opts format (should be name=value but got '%s')", p)
			}
			params[k] = val
		}
		short = append(short, params["published"]+":"+params["target"]+"/"+params["protocol"])
	}
	_, bindings, err := nat.ParsePortSpecs(short)
	if err != nil {
		return nil, err
	}
	var out []portBinding
	for port, bs := range bindings {
		for _, b := range bs {
			if b.HostIP != "" {
				if _, err := netip.ParseAddr(b.HostIP); err != nil {
					return nil, err
				}
			}
			out = append(out, portBinding{HostIP: b.HostIP, HostPort: b.HostPort, ContainerPort: string(port)})
		}
	}
	return out, nil
}

// volume is one parsed -v value.
type volume struct {
	source, target string
	bind           bool // source is a host path
}

var (
	volumeNameRE   = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)
	volumeModes    = map[string]bool{"ro": true, "rw": true, "z": true, "Z": true, "nocopy": true, "shared": true, "rshared": true, "slave": true, "rslave": true, "private": true, "rprivate": true, "consistent": true, "cached": true, "delegated": true}
	containerNamRE = regexp.MustCompile(`^/?[a-zA-Z0-9][a-zA-Z0-9_.-]+$`)
)

// parseVolume reads [SOURCE:]TARGET[:MODE] for a Linux daemon.
func parseVolume(spec string) (volume, error) {
	invalid := func(why string) error { return fmt.Errorf("invalid spec: %s: %s", spec, why) }
	parts := strings.Split(spec, ":")
	var v volume
	var mode string
	switch len(parts) {
	case 1:
		v.target = parts[0]
	case 2:
		if volumeModes[parts[1]] || strings.Contains(parts[1], ",") && !strings.HasPrefix(parts[1], "/") {
			v.target, mode = parts[0], parts[1]
		} else {
			v.source, v.target = parts[0], parts[1]
		}
	case 3:
		v.source, v.target, mode = parts[0], parts[1], parts[2]
	default:
		return v, invalid("too many colons")
	}
	if v.target == "" {
		return v, invalid("empty section between colons")
	}
	if !path.IsAbs(v.target) {
		return v, fmt.Errorf("invalid volume specification: '%s': invalid mount config for type \"volume\": invalid mount path: '%s' mount path must be absolute", spec, v.target)
	}
	for _, m := range strings.Split(mode, ",") {
		if mode != "" && !volumeModes[m] {
			return v, fmt.Errorf("invalid mode: %s", mode)
		}
	}
	switch {
	case v.source == "":
	case strings.HasPrefix(v.source, "/"):
		v.bind = true
	case strings.HasPrefix(v.source, "."):
		abs, err := filepath.Abs(v.source)
		if err != nil {
			return v, err
		}
		v.source, v.bind = abs, true
	case !volumeNameRE.MatchString(v.source):
		return v, fmt.Errorf("create %s: %q includes invalid characters for a local volume name, only \"[a-zA-Z0-9][a-zA-Z0-9_.-]\" are allowed. If you intended to pass a host directory, use absolute path", v.source, v.source)
	}
	return v, nil
}

// validDeviceMode: some of r, w, m, each at most once.
func validDeviceMode(mode string) bool {
	if mode == "" {
		return false
	}
	seen := map[rune]bool{}
	for _, c := range mode {
		if !strings.ContainsRune("rwm", c) || seen[c] {
			return false
		}
		seen[c] = true
	}
	return true
}

// parseDevice reads HOST[:CONTAINER][:MODE] and returns the host path.
func parseDevice(val string) (string, error) {
	if strings.Count(val, ":") > 2 {
		return "", fmt.Errorf("bad format for path: %s", val)
	}
	split := strings.SplitN(val, ":", 3)
	if split[0] == "" {
		return "", fmt.Errorf("bad format for path: %s", val)
	}
	containerPath := split[0]
	switch len(split) {
	case 2:
		if !validDeviceMode(split[1]) {
			containerPath = split[1]
		}
	case 3:
		containerPath = split[1]
		if !validDeviceMode(split[2]) {
			return "", fmt.Errorf("bad mode specified: %s", split[2])
		}
	}
	if !path.IsAbs(containerPath) {
		return "", fmt.Errorf("%s is not an absolute path", containerPath)
	}
	return split[0], nil
}

// checkSecurityOpts is the client's check of --security-opt values.
func checkSecurityOpts(values []string) error {
	for _, opt := range values {
		k, v, ok := strings.Cut(opt, "=")
		if !ok && k != "no-new-privileges" {
			k, v, ok = strings.Cut(opt, ":")
		}
		if (!ok || v == "") && k != "no-new-privileges" {
			return fmt.Errorf("invalid --security-opt: %q", opt)
		}
		if k == "seccomp" && v != "builtin" && v != "unconfined" {
			if _, err := os.ReadFile(v); err != nil {
				return fmt.Errorf("opening seccomp profile (%s) failed: %w", v, err)
			}
		}
	}
	return nil
}

// daemonSecurityOpt is the daemon's check of a --security-opt key.
func daemonSecurityOpt(opt string) error {
	k, _, _ := strings.Cut(opt, "=")
	if k == opt {
		k, _, _ = strings.Cut(opt, ":")
	}
	switch k {
	case "label", "apparmor", "seccomp", "no-new-privileges", "systempaths", "writable-cgroups":
		return nil
	}
	return fmt.Errorf("invalid --security-opt 2: %q", opt)
}

// validIPC is the daemon's check of --ipc.
func validIPC(mode string) bool {
	switch mode {
	case "", "none", "private", "shareable", "host":
		return true
	}
	name, ok := strings.CutPrefix(mode, "container:")
	return ok && name != ""
}

// capabilities the daemon knows (linux/capability.h).
var capabilities = strings.Fields(`CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP
	LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO
	SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE
	AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF
	CHECKPOINT_RESTORE`)

// checkCap normalises as the client does (upper case, CAP_ prefix) and
// checks as the daemon does.
func checkCap(c string) error {
	n := strings.ToUpper(strings.TrimSpace(c))
	if n == "ALL" {
		return nil
	}
	n = strings.TrimPrefix(n, "CAP_")
	for _, k := range capabilities {
		if k == n {
			return nil
		}
	}
	return fmt.Errorf("invalid CapAdd: unknown capability: %q", "CAP_"+n)
}

// checkImage is the client's reference check.
func checkImage(ref string) error {
	_, err := reference.ParseNormalizedNamed(ref)
	return err
}
