//go:build linux

package ready

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// tcpListen is the state of a listening socket in /proc/net/tcp.
const tcpListen = "0A"

// listenInodes lists the inodes of the sockets listening on port, on any
// address, IPv4 or IPv6, from /proc/net/tcp and /proc/net/tcp6.
func listenInodes(port int) (map[string]bool, error) {
	out := map[string]bool{}
	want := fmt.Sprintf(":%04X", port)
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue // no IPv6
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Scan() // header
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:tm retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			if len(f) < 10 || f[3] != tcpListen || !strings.HasSuffix(f[1], want) {
				continue
			}
			out[f[9]] = true
		}
	}
	return out, nil
}

// holdersOf finds the processes with a descriptor on one of the socket
// inodes. Processes whose descriptors the runner may not read are left
// out.
func holdersOf(inodes map[string]bool) ([]Holder, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []Holder
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir("/proc/" + e.Name() + "/fd")
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			link, err := os.Readlink("/proc/" + e.Name() + "/fd/" + fd.Name())
			if err != nil {
				continue
			}
			inode, ok := strings.CutPrefix(link, "socket:[")
			if ok && inodes[strings.TrimSuffix(inode, "]")] {
				cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
				out = append(out, Holder{Pid: pid, Cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmd), "\x00", " "))})
				break
			}
		}
	}
	return out, nil
}

// InTree reports whether pid is root or one of its descendants, or shares
// root's process group or session: vLLM's API server and engine
// processes are children of `vllm serve`, and may have left its group.
func InTree(root, pid int) bool {
	for p, hops := pid, 0; p > 1 && hops < 64; hops++ {
		if p == root {
			return true
		}
		st, err := readStat(p)
		if err != nil {
			return false
		}
		if st.pgrp == root || st.session == root {
			return true
		}
		p = st.ppid
	}
	return false
}

type procStat struct{ ppid, pgrp, session int }

func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// "pid (comm) state ppid pgrp session ...": comm may hold ") ".
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected layout", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 4 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected layout", pid)
	}
	var st procStat
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgrp, _ = strconv.Atoi(f[2])
	st.session, _ = strconv.Atoi(f[3])
	return st, nil
}
