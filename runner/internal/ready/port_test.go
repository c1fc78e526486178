package ready

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
)

func listen(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestCheckPortFree(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("socket owners need /proc")
	}
	if err := CheckPortFree(freePort(t)); err != nil {
		t.Errorf("CheckPortFree(free port) = %v, want nil", err)
	}
	port := listen(t)
	err := CheckPortFree(port)
	if !errors.Is(err, ErrPortInUse) {
		t.Fatalf("CheckPortFree(held port) = %v, want ErrPortInUse", err)
	}
	// The holder is this test process: named by pid and command line.
	if want := fmt.Sprintf("pid %d (%s", os.Getpid(), os.Args[0]); !strings.Contains(err.Error(), want) {
		t.Errorf("CheckPortFree(held port) = %q, want it to name %q", err, want)
	}
}

func TestCheckOwner(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("socket owners need /proc")
	}
	port := listen(t)
	me := os.Getpid()
	tests := []struct {
		name    string
		port    int
		ours    func(int) bool
		wantErr string
	}{
		{"our process holds it", port, func(pid int) bool { return pid == me }, ""},
		{"our tree", port, func(pid int) bool { return InTree(me, pid) }, ""},
		{"someone else holds it", port, func(int) bool { return false }, fmt.Sprintf("port %d is held by pid %d", port, me)},
		{"nothing listens", freePort(t), func(int) bool { return true }, "nothing listens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckOwner(tt.port, tt.ours)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckOwner() = %v, want nil", err)
			case tt.wantErr != "" && (!errors.Is(err, ErrNotOurServer) || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckOwner() = %v, want ErrNotOurServer with %q", err, tt.wantErr)
			}
		})
	}
}

func TestInTree(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	if !InTree(os.Getppid(), os.Getpid()) {
		t.Errorf("InTree(parent, me) = false, want true")
	}
	if InTree(os.Getpid(), os.Getppid()) && os.Getppid() != 1 {
		// The parent shares the test's group or session only when it
		// started it so; then it counts, by design.
		if st, err := readStat(os.Getppid()); err == nil && st.pgrp != os.Getpid() && st.session != os.Getpid() {
			t.Errorf("InTree(me, parent) = true, want false")
		}
	}
}
