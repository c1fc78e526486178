package confine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Wrap returns the program and argv that run path (argv[0] and its
// arguments being argv) confined by p, and sets attr's namespace fields.
// attr keeps what the caller set (session, parent-death signal).
func Wrap(path string, argv []string, p Policy, attr *syscall.SysProcAttr) (string, []string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, fmt.Errorf("confine %s: find the runner's executable: %w", path, err)
	}
	cfg, err := json.Marshal(p)
	if err != nil {
		return "", nil, fmt.Errorf("confine %s: %w", path, err)
	}
	attr.Cloneflags |= syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS
	attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
	attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	attr.GidMappingsEnableSetgroups = false
	return exe, append([]string{shimName, string(cfg), path}, argv...), nil
}

// setup makes the mounts of p private to the process, read-only where
// p says, and gives up what could undo them.
func setup(p Policy) error {
	// Nothing mounted here reaches the namespace the runner is in.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	for _, dir := range p.ReadOnly {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("read-only path %q is not absolute", dir)
		}
		if _, err := os.Stat(dir); err != nil {
			continue
		}
		if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s: %w", dir, err)
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			return fmt.Errorf("statfs %s: %w", dir, err)
		}
		// A remount in a user namespace must keep the flags the mount
		// had (they are locked): carry them over.
		flags := uintptr(syscall.MS_REMOUNT | syscall.MS_BIND | syscall.MS_RDONLY)
		for _, f := range []struct{ st, ms int64 }{
			{stNoSuid, syscall.MS_NOSUID}, {stNoDev, syscall.MS_NODEV}, {stNoExec, syscall.MS_NOEXEC},
			{stNoAtime, syscall.MS_NOATIME}, {stNoDirAtime, syscall.MS_NODIRATIME}, {stRelatime, syscall.MS_RELATIME},
		} {
			if int64(st.Flags)&f.st != 0 {
				flags |= uintptr(f.ms)
			}
		}
		if err := syscall.Mount("", dir, "", flags, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", dir, err)
		}
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_CAPBSET_DROP, capSysAdmin, 0); errno != 0 {
		return fmt.Errorf("drop CAP_SYS_ADMIN: %w", errno)
	}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); errno != 0 {
		return fmt.Errorf("no new privileges: %w", errno)
	}
	return nil
}

// statfs(2) f_flags and capability numbers (linux/capability.h, prctl.h).
const (
	stNoSuid        = 0x2
	stNoDev         = 0x4
	stNoExec        = 0x8
	stNoAtime       = 0x400
	stNoDirAtime    = 0x800
	stRelatime      = 0x1000
	capSysAdmin     = 21
	prSetNoNewPrivs = 38
)
