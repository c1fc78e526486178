package confine_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/runner/internal/confine"
	"github.com/benchkite/benchkite/runner/internal/proc"
)

// tokens are a job's secrets, in the environment of the process that
// starts the runner, as buildkite-agent's bootstrap holds them.
var tokens = map[string]string{
	"BUILDKITE_AGENT_ACCESS_TOKEN": "agent-token-q1w2e3",
	"BUILDKITE_API_TOKEN":          "api-token-r4t5y6",
	"BENCHKITE_INGEST_TOKEN":       "ingest-token-u7i8",
	"SECOND_API_TOKEN":             "second-token-o9p0",
}

const (
	roleEnv   = "CONFINE_TEST_ROLE"
	roDirEnv  = "CONFINE_TEST_RO"
	confEnv   = "CONFINE_TEST_CONFINED"
	foundMark = "FOUND "
	readMark  = "READABLE "
)

// TestMain lets the test binary play the parent holding the tokens and
// the child running model code that looks for them.
func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "parent":
		os.Exit(parent())
	case "scanner":
		os.Exit(scan())
	case "probe":
		if err := confine.Probe(context.Background(), confine.Policy{}); err != nil {
			fmt.Println("probe:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// parent keeps the tokens in its environment while it starts the
// scanner through proc.Exec with a clean one, confined or not.
func parent() int {
	spec := proc.Spec{
		Argv:   []string{os.Args[0]},
		Env:    []string{"PATH=/usr/bin:/bin", roleEnv + "=scanner", roDirEnv + "=" + os.Getenv(roDirEnv), "PARENT_PID=" + strconv.Itoa(os.Getpid())},
		Stdout: os.Stdout, Stderr: os.Stdout,
	}
	if os.Getenv(confEnv) == "1" {
		spec.Confine = &confine.Policy{ReadOnly: []string{os.Getenv(roDirEnv)}}
	}
	if err := (proc.Exec{}).Run(context.Background(), spec); err != nil {
		fmt.Println("scanner:", err)
		return 1
	}
	return 0
}

// scan opens every /proc/*/environ and /proc/*/mem it can, prints each
// token it finds and each memory it could open, then tries to change the
// read-only directory.
func scan() int {
	entries, _ := os.ReadDir("/proc")
	read := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil {
			read++
			for k, v := range tokens {
				if bytes.Contains(data, []byte(v)) {
					fmt.Printf("%s%s in /proc/%s/environ\n", foundMark, k, e.Name())
				}
			}
		}
		if e.Name() == strconv.Itoa(os.Getpid()) {
			continue
		}
		if f, err := os.Open(filepath.Join("/proc", e.Name(), "mem")); err == nil {
			f.Close()
			fmt.Printf("%s/proc/%s/mem\n", readMark, e.Name())
		}
	}
	fmt.Printf("scanned %d environ files\n", read)
	ppid := os.Getenv("PARENT_PID")
	if _, err := os.ReadFile("/proc/" + ppid + "/environ"); err != nil {
		fmt.Printf("parent environ: %v\n", err)
	}
	ro := os.Getenv(roDirEnv)
	if err := os.WriteFile(filepath.Join(ro, "poison.pth"), []byte("import os\n"), 0o644); err == nil {
		fmt.Println("WROTE into the read-only directory")
	} else {
		fmt.Printf("write: %v\n", err)
	}
	if err := syscall.Unmount(ro, syscall.MNT_DETACH); err == nil {
		fmt.Println("UNMOUNTED the read-only directory")
	}
	if err := syscall.Mount("", ro, "", syscall.MS_REMOUNT|syscall.MS_BIND, ""); err == nil {
		fmt.Println("REMOUNTED the read-only directory writable")
	}
	// A user namespace of its own, where it is root with every
	// capability, does not give the directory back either.
	if sh, err := exec.LookPath("unshare"); err == nil {
		out, _ := exec.Command(sh, "--user", "--map-root-user", "--mount", "sh", "-c",
			"umount -l "+ro+" 2>/dev/null; mount -o remount,bind,rw "+ro+" 2>/dev/null; echo x > "+ro+"/nested.pth && echo NESTED-WROTE").CombinedOutput()
		fmt.Printf("nested namespace: %s\n", strings.TrimSpace(string(out)))
	}
	return 0
}

// runParent starts the test binary as the parent, as uid when not -1.
func runParent(t *testing.T, uid int, confined bool) string {
	t.Helper()
	bin := os.Args[0]
	ro := t.TempDir()
	if uid >= 0 {
		testutil.OpenToAll(t, ro)
		// The directory is the user's own: only the mount keeps it from
		// writing there.
		if err := os.Chown(ro, uid, uid); err != nil {
			t.Fatal(err)
		}
		bin = testutil.ExecutableCopy(t, "confine.test")
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{"PATH=/usr/bin:/bin", roleEnv + "=parent", roDirEnv + "=" + ro}
	if confined {
		cmd.Env = append(cmd.Env, confEnv+"=1")
	}
	for k, v := range tokens {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if uid >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("parent: %v\n%s", err, out)
	}
	if confined {
		if _, err := os.Stat(filepath.Join(ro, "poison.pth")); err == nil {
			t.Errorf("the confined child wrote into the read-only directory")
		}
		if _, err := os.Stat(filepath.Join(ro, "nested.pth")); err == nil {
			t.Errorf("the confined child wrote into the read-only directory from a namespace of its own")
		}
	}
	return string(out)
}

// A confined child finds no token in any /proc/*/environ it can read and
// opens no other process's memory, although its parent holds every token
// in its environment, as root (with CAP_SYS_PTRACE, as on the AMD
// clusters) and as nobody; it cannot write to, unmount or remount the
// read-only directory. Unconfined, the same scan finds every token in
// the parent's environment: the check is not vacuous.
func TestConfinedSeesNoParent(t *testing.T) {
	t.Parallel()
	users := []struct {
		name string
		uid  int
	}{{"as the test's user", -1}}
	if os.Geteuid() == 0 {
		users = append(users, struct {
			name string
			uid  int
		}{"as nobody", 65534})
	} else {
		t.Log("not root: the run as another user (nobody) is skipped; this run is as uid " + strconv.Itoa(os.Geteuid()))
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			out := runParent(t, u.uid, true)
			t.Logf("confined:\n%s", out)
			for _, bad := range []string{foundMark, readMark, "WROTE", "UNMOUNTED", "REMOUNTED", "NESTED-WROTE"} {
				if strings.Contains(out, bad) {
					t.Errorf("the confined child got %q:\n%s", bad, out)
				}
			}
			if !strings.Contains(out, "scanned ") || strings.Contains(out, "scanned 0 environ") {
				t.Errorf("the scan read nothing (not even its own environ):\n%s", out)
			}
			if !strings.Contains(out, "parent environ: ") || !strings.Contains(out, "read-only file system") {
				t.Errorf("want the parent's environ refused and the write refused as read-only:\n%s", out)
			}
			control := runParent(t, u.uid, false)
			for k := range tokens {
				if !strings.Contains(control, foundMark+k+" in /proc/") {
					t.Errorf("unconfined, the scan does not find %s; it would not see a leak:\n%s", k, control)
				}
			}
			if !strings.Contains(control, "WROTE into the read-only directory") {
				t.Errorf("unconfined, the child cannot write the directory: the read-only check shows nothing:\n%s", control)
			}
		})
	}
}

// Probe makes the namespaces and the read-only mount and runs nothing;
// a read-only path that is not absolute is refused there, before any
// command would start.
func TestProbe(t *testing.T) {
	t.Parallel()
	if err := confine.Probe(context.Background(), confine.Policy{ReadOnly: []string{t.TempDir()}}); err != nil {
		t.Fatalf("Probe() = %v", err)
	}
	err := confine.Probe(context.Background(), confine.Policy{ReadOnly: []string{"relative/dir"}})
	if err == nil || !strings.Contains(err.Error(), `read-only path "relative/dir" is not absolute`) {
		t.Errorf("Probe(relative) = %v, want the path refused", err)
	}
}

// Where the kernel refuses a user namespace (here: the process's uid is
// mapped in none above it, so clone(CLONE_NEWUSER) fails with EPERM),
// Probe fails and says what to change; the job then stops before any
// model loads.
func TestProbeRefusedWhereNoUserNamespace(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = []string{"PATH=/usr/bin:/bin", roleEnv + "=probe"}
	// A user namespace without a uid map: nothing can be nested in it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("Probe succeeded where the kernel refuses a user namespace:\n%s", out)
	}
	for _, want := range []string{"user namespaces are unavailable", "operation not permitted", "--unconfined"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("Probe's error lacks %q:\n%s", want, out)
		}
	}
}
