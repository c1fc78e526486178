package job

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// The server's port when no port was asked for: derived from the
// Buildkite job id, as perf-eval derives it, so that two jobs on one host
// (docker publishes the port on the host, a host-network container or pod
// binds it there) do not collide, and a job's port is the same in its plan
// and its run.
const (
	jobPortBase  = 20000
	jobPortRange = 40000
	// DefaultPort is the port outside a Buildkite job.
	DefaultPort = 8000
)

// JobPort is 20000 + cksum(job id) % 40000: the port perf-eval's jobs
// use, so a host that runs both keeps the one rule.
func JobPort(jobID string) int {
	return jobPortBase + int(cksum([]byte(jobID))%jobPortRange)
}

// cksum is the POSIX cksum checksum (CRC-32, polynomial 0x04C11DB7, bits
// most significant first, the length appended, the result inverted), what
// `printf %s "$id" | cksum` prints first.
func cksum(data []byte) uint32 {
	var crc uint32
	step := func(b byte) {
		crc ^= uint32(b) << 24
		for i := 0; i < 8; i++ {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04C11DB7
			} else {
				crc <<= 1
			}
		}
	}
	for _, b := range data {
		step(b)
	}
	for n := len(data); n > 0; n >>= 8 {
		step(byte(n))
	}
	return ^crc
}

// ParsePort reads a port number from a variable or flag named what.
func ParsePort(what, s string) (int, error) {
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || p < 1 || p > 65535 {
		return 0, fmt.Errorf("%s %q is not a port (1-65535)", what, s)
	}
	return p, nil
}

// setPort moves the server to port p before it starts.
func (j *Job) setPort(p int) {
	j.port = p
	j.baseURL = fmt.Sprintf("http://%s:%d", loopback, p)
}

// freePort is a loopback port nothing listens on right now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", loopback+":0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
