package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/testutil"
)

// The test binary doubles as the child program: with PROC_TEST_HELPER set
// it behaves as the named fake instead of running tests.
const helperEnv = "PROC_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperMain(mode))
	}
	os.Exit(m.Run())
}

func helperMain(mode string) int {
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stdout, "out line")
		fmt.Fprintln(os.Stderr, "err line")
		code, _ := strconv.Atoi(os.Getenv("PROC_TEST_CODE"))
		return code
	case "env":
		wd, _ := os.Getwd()
		_, hasHome := os.LookupEnv("HOME")
		fmt.Printf("FOO=%s\nHOME set=%t\ncwd=%s\n", os.Getenv("FOO"), hasHome, wd)
		return 0
	case "sleep":
		announceReady()
		time.Sleep(time.Hour)
		return 0
	case "count-term":
		// Print every SIGTERM, numbered; a grandchild in the same group
		// (and one that left it) does the same, so each process's count
		// shows how many it received.
		terms := make(chan os.Signal, 16)
		signal.Notify(terms, syscall.SIGTERM)
		if os.Getenv("PROC_TEST_KIDS") == "1" {
			for _, newGroup := range []bool{false, true} {
				cmd := exec.Command(os.Args[0])
				cmd.Env = []string{helperEnv + "=count-term"}
				cmd.Stdout = os.Stdout
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: newGroup}
				if err := cmd.Start(); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 2
				}
			}
		}
		fmt.Printf("ready %d\n", os.Getpid())
		n := 0
		for range terms {
			n++
			fmt.Printf("%d TERM %d\n", os.Getpid(), n)
		}
		return 0
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
		announceReady()
		time.Sleep(time.Hour)
		return 0
	case "grandchild", "grandchild-ignore-term", "escape":
		// Start a grandchild that shares our stdout, then exit without
		// waiting for it.
		gmode := "sleep"
		if mode == "grandchild-ignore-term" {
			gmode = "ignore-term"
		}
		ready, readyW, err := os.Pipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		cmd := exec.Command(os.Args[0])
		cmd.Env = []string{helperEnv + "=" + gmode, readyFDEnv + "=3"}
		cmd.Stdout = os.Stdout
		cmd.ExtraFiles = []*os.File{readyW}
		if mode == "escape" {
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		readyW.Close()
		// Exit only once the grandchild has set up its signals, so the
		// test can rely on them.
		if _, err := ready.Read(make([]byte, 1)); err != nil {
			fmt.Fprintln(os.Stderr, "grandchild not ready:", err)
			return 2
		}
		fmt.Printf("grandchild=%d\n", cmd.Process.Pid)
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	return 2
}

// readyFDEnv names the inherited descriptor on which a helper reports that
// it is set up; without it the helper prints "ready" instead.
const readyFDEnv = "PROC_TEST_READY_FD"

func announceReady() {
	fd, err := strconv.Atoi(os.Getenv(readyFDEnv))
	if err != nil {
		fmt.Println("ready")
		return
	}
	f := os.NewFile(uintptr(fd), "ready")
	f.Write([]byte{1})
	f.Close()
}

func readStat(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return string(b)
}

// helper returns a Spec that runs this test binary as the fake child.
func helper(mode string, extraEnv ...string) Spec {
	return Spec{
		Argv: []string{os.Args[0]},
		Env:  append([]string{helperEnv + "=" + mode}, extraEnv...),
	}
}

// syncBuffer is a child's output, both streams, as the test reads it.
type syncBuffer struct {
	testutil.SyncBuffer
}

// waitFor polls until the output holds want. The bound is generous: it
// only keeps a broken test from hanging.
func (s *syncBuffer) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(s.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("child output never contained %q; got %q", want, s.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitDone fails the test if p does not finish within a generous bound.
func waitDone(t *testing.T, p Process) error {
	t.Helper()
	select {
	case <-p.Done():
		return p.Wait()
	case <-time.After(30 * time.Second):
		t.Fatalf("process %d did not finish", p.Pid())
		return nil
	}
}

// assertGroupGone checks that no process of group pgid is left.
// kill(-pgid, 0) returning ESRCH is the plain answer; where PID 1 does not
// reap orphans, killed grandchildren stay as zombies, which hold nothing
// and count as gone.
func assertGroupGone(t *testing.T, pgid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Kill(-pgid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		live, lerr := liveMembers(pgid)
		if lerr != nil {
			t.Fatalf("liveMembers(%d): %v", pgid, lerr)
		}
		if len(live) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d still has live members %v", pgid, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// assertPidGone checks that pid has exited (reaped or zombie).
func assertPidGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		stat := readStat(pid)
		if stat == "" || strings.Contains(stat[strings.LastIndexByte(stat, ')')+1:], " Z ") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running: %s", pid, stat)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func grandchildPid(t *testing.T, out string) int {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "grandchild="); ok {
			pid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("bad grandchild line %q", line)
			}
			return pid
		}
	}
	t.Fatalf("no grandchild pid in output %q", out)
	return 0
}
