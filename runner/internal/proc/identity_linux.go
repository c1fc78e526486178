package proc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Identity names this process on this host so that another process can
// later tell whether it still runs: the PID namespace, the pid and the
// start time (a reused pid starts later). "" when /proc cannot say.
func Identity() string {
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	pid := os.Getpid()
	start, ok := startTime(pid)
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s/%d/%s", ns, pid, start)
}

// IdentityAlive reports whether the process an Identity names still
// runs; known is false when this process cannot tell (another PID
// namespace, a malformed identity).
func IdentityAlive(id string) (alive, known bool) {
	ns, rest, ok := strings.Cut(id, "/")
	if !ok {
		return false, false
	}
	pidText, start, ok := strings.Cut(rest, "/")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 {
		return false, false
	}
	if own, err := os.Readlink("/proc/self/ns/pid"); err != nil || own != ns {
		return false, false
	}
	got, ok := startTime(pid)
	return ok && got == start, true
}

// startTime is field 22 of /proc/<pid>/stat, the start time in clock
// ticks since boot.
func startTime(pid int) (string, bool) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", false
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(data[i+1:]))
	// f[0] is field 3 (state); the start time is field 22.
	if len(f) < 20 {
		return "", false
	}
	return f[19], true
}
