package secrets

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
)

// tokens are the secrets of a real job, as the agent sets them.
var tokens = map[string]string{
	"BUILDKITE_AGENT_ACCESS_TOKEN": "agent-token-a1b2c3",
	"BUILDKITE_API_TOKEN":          "api-token-d4e5f6",
	"BENCHKITE_INGEST_TOKEN":       "ingest-token-g7h8",
	"HF_TOKEN":                     "hf_token_i9j0",
}

const (
	roleEnv   = "SECRETS_TEST_ROLE"
	noStart   = "runner-without-start"
	runner    = "runner"
	scanner   = "scanner"
	foundMark = "FOUND "
)

// TestMain lets the test binary play the runner and the child that
// looks for the runner's secrets.
func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case runner, noStart:
		os.Exit(runnerRole())
	case scanner:
		os.Exit(scan())
	}
	os.Exit(m.Run())
}

// runnerRole starts as the runner does, checks it still has every secret,
// then runs a child of its own uid that looks for them.
func runnerRole() int {
	env := Env{environ: os.Environ()}
	if os.Getenv(roleEnv) == runner {
		var err error
		if env, err = Start(os.Args, os.Environ()); err != nil {
			fmt.Println("start:", err)
			return 3
		}
		for k, v := range tokens {
			if env.Getenv(k) != v {
				fmt.Printf("lost %s\n", k)
				return 3
			}
		}
	}
	// The child's environment is what the runner gives it: no secrets.
	clean, _ := Split(env.Environ())
	for i, kv := range clean {
		if strings.HasPrefix(kv, roleEnv+"=") {
			clean[i] = roleEnv + "=" + scanner
		}
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(clean, "SECRETS_TEST_RUNNER_PID="+strconv.Itoa(os.Getpid()))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Println("scanner:", err)
		return 1
	}
	return 0
}

// scan reads every /proc/*/environ and /proc/*/cmdline it can, and the
// runner's memory maps' readable bytes, and prints each secret it finds.
func scan() int {
	entries, _ := os.ReadDir("/proc")
	read := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		for _, f := range []string{"environ", "cmdline"} {
			data, err := os.ReadFile(filepath.Join("/proc", e.Name(), f))
			if err != nil {
				continue
			}
			read++
			for k, v := range tokens {
				if bytes.Contains(data, []byte(v)) {
					fmt.Printf("%s%s in /proc/%s/%s\n", foundMark, k, e.Name(), f)
				}
			}
		}
	}
	pid := os.Getenv("SECRETS_TEST_RUNNER_PID")
	if _, err := os.ReadFile("/proc/" + pid + "/environ"); err == nil {
		fmt.Printf("READABLE /proc/%s/environ\n", pid)
	}
	if f, err := os.Open("/proc/" + pid + "/mem"); err == nil {
		f.Close()
		fmt.Printf("READABLE /proc/%s/mem\n", pid)
	}
	fmt.Printf("scanned %d files\n", read)
	return 0
}

// runAs starts the test binary as the runner (role) with the tokens in
// its environment, as uid when not -1, and returns what it and its
// scanning child printed.
func runAs(t *testing.T, role string, uid int, extraEnv ...string) string {
	t.Helper()
	bin := os.Args[0]
	if uid >= 0 {
		// A copy nobody can execute.
		bin = testutil.ExecutableCopy(t, "runner")
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = []string{"PATH=/usr/bin:/bin", roleEnv + "=" + role}
	for k, v := range tokens {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	if uid >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(&out)
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", role, err, out.String())
	}
	return out.String()
}

// No child of the runner finds a secret in any /proc/*/environ or
// cmdline it can read, as root and as an unprivileged user; the runner
// keeps every secret in memory. Without Start the same scan finds them:
// the check is not vacuous.
func TestNoSecretReadableByAChild(t *testing.T) {
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
			out := runAs(t, runner, u.uid)
			if strings.Contains(out, foundMark) {
				t.Errorf("a child found secrets:\n%s", out)
			}
			if !strings.Contains(out, "scanned ") || strings.Contains(out, "scanned 0 files") {
				t.Errorf("the scan read nothing:\n%s", out)
			}
			if os.Geteuid() != 0 || u.uid >= 0 {
				// Non-dumpable: another process of the uid cannot read
				// the runner's environ or memory (root can).
				if strings.Contains(out, "READABLE") {
					t.Errorf("the runner's /proc files are readable by its child:\n%s", out)
				}
			}
			control := runAs(t, noStart, u.uid)
			for k := range tokens {
				if !strings.Contains(control, foundMark+k+" in /proc/") {
					t.Errorf("without Start the scan does not find %s; it would not see a leak:\n%s", k, control)
				}
			}
		})
	}
}

func TestSplitAndEnv(t *testing.T) {
	t.Parallel()
	clean, secret := Split([]string{"PATH=/bin", "HF_TOKEN=x", "BUILDKITE_STEP_KEY=recipe:a", "EMPTY_TOKEN=", FDEnv + "=9"})
	if strings.Join(clean, " ") != "PATH=/bin BUILDKITE_STEP_KEY=recipe:a EMPTY_TOKEN=" || len(secret) != 1 || secret["HF_TOKEN"] != "x" {
		t.Errorf("Split() = %q, %v", clean, secret)
	}
	e := Env{environ: clean, secret: secret}
	if e.Getenv("HF_TOKEN") != "x" || e.Getenv("PATH") != "/bin" || e.Getenv("NONE") != "" {
		t.Errorf("Getenv wrong")
	}
	if got := strings.Join(e.Environ(), " "); got != "PATH=/bin BUILDKITE_STEP_KEY=recipe:a EMPTY_TOKEN= HF_TOKEN=x" {
		t.Errorf("Environ() = %s", got)
	}
}

// A BENCHKITE_SECRETS_FD that came with the job's environment, naming no
// pipe or no descriptor at all, is not taken for the re-executed runner's:
// the runner starts, keeps every secret and leaks none.
func TestForgedSecretsFDIsIgnored(t *testing.T) {
	// Not parallel: another test's control run holds the tokens in its
	// environment on purpose, and the scan would find them.
	for _, v := range []string{"9", "3", "nope", "1"} {
		out := runAs(t, runner, -1, FDEnv+"="+v)
		if strings.Contains(out, foundMark) || strings.Contains(out, "start:") || strings.Contains(out, "lost ") {
			t.Errorf("%s=%s: %s", FDEnv, v, out)
		}
	}
}
