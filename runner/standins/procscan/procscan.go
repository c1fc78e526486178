// Package procscan is what model code run by a served model could do to
// find a token: read every /proc/<pid>/environ and open every
// /proc/<pid>/mem it can. A stand-in that runs model code in real life
// (vllm serve, vllm bench serve, lm_eval) calls Record when it starts;
// the tests read what it found.
package procscan

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Env names the folder Record writes into; unset, Record does nothing.
const Env = "FAKE_PROC_SCAN_DIR"

// Record writes scan-<pid>.txt into $FAKE_PROC_SCAN_DIR: the program's
// argv, then for every process, the environ it could read (NUL-separated
// as the kernel gives it, hex-quoted) and whether it could open its mem.
func Record() {
	dir := os.Getenv(Env)
	if dir == "" {
		return
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "argv %q\nself %d\n", os.Args, os.Getpid())
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ")); err == nil {
			fmt.Fprintf(&out, "environ %d %q\n", pid, data)
		}
		if pid == os.Getpid() {
			continue
		}
		if f, err := os.Open(filepath.Join("/proc", e.Name(), "mem")); err == nil {
			f.Close()
			fmt.Fprintf(&out, "mem %d\n", pid)
		}
	}
	_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("scan-%d.txt", os.Getpid())), out.Bytes(), 0o644)
}
