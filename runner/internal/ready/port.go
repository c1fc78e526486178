package ready

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
)

// Holder is a process that holds a listening socket.
type Holder struct {
	Pid     int
	Cmdline string // as in /proc/<pid>/cmdline, arguments joined by spaces
}

func (h Holder) String() string {
	if h.Cmdline == "" {
		return fmt.Sprintf("pid %d", h.Pid)
	}
	return fmt.Sprintf("pid %d (%s)", h.Pid, clipCmdline(h.Cmdline))
}

func clipCmdline(s string) string {
	const most = 200
	if len(s) > most {
		return s[:most] + "…"
	}
	return s
}

// ErrPortInUse means something already listens on the server's port.
var ErrPortInUse = errors.New("port already in use")

// ErrNotOurServer means the port is served by a process that is not the
// runner's server.
var ErrNotOurServer = errors.New("the port is not served by our server")

// describeHolders names the holders for an error message.
func describeHolders(hs []Holder) string {
	if len(hs) == 0 {
		return "a process the runner cannot see (another user's, or another network namespace)"
	}
	var parts []string
	for _, h := range hs {
		parts = append(parts, h.String())
	}
	return strings.Join(parts, ", ")
}

// CheckPortFree fails with ErrPortInUse, naming the holder when it can,
// when anything listens on port: a leftover server would answer /health
// and every request in place of ours.
func CheckPortFree(port int) error {
	inodes, err := listenInodes(port)
	if err != nil {
		return fmt.Errorf("check port %d: %w", port, err)
	}
	if len(inodes) == 0 {
		return nil
	}
	holders, _ := holdersOf(inodes)
	return fmt.Errorf("%w: port %d is held by %s; stop it (or pick another --port) so that the run measures its own server", ErrPortInUse, port, describeHolders(holders))
}

// CheckOwner fails with ErrNotOurServer unless a process of ours (ours
// reports whether a pid belongs to the server's process tree) listens on
// port, naming who does.
//
// Only Linux can tell socket owners apart; elsewhere it returns nil.
func CheckOwner(port int, ours func(pid int) bool) error {
	if runtime.GOOS != "linux" {
		return nil
	}
	inodes, err := listenInodes(port)
	if err != nil {
		return fmt.Errorf("check port %d: %w", port, err)
	}
	if len(inodes) == 0 {
		return fmt.Errorf("%w: nothing listens on port %d", ErrNotOurServer, port)
	}
	holders, err := holdersOf(inodes)
	if err != nil {
		return fmt.Errorf("check port %d: %w", port, err)
	}
	for _, h := range holders {
		if ours(h.Pid) {
			return nil
		}
	}
	return fmt.Errorf("%w: port %d is held by %s", ErrNotOurServer, port, describeHolders(holders))
}
