package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// Knobs.
const (
	// stateEnv names the directory holding the containers; default
	// $HOME/.fake-docker.
	stateEnv = "FAKE_DOCKER_STATE"
	// imageEnvEnv lists, comma-separated, variables of docker's own
	// environment every container starts with: the ENV lines of the
	// image, which is how a test hands the stand-in vllm its knobs.
	imageEnvEnv = "FAKE_DOCKER_IMAGE_ENV"
	// imagePathEnv lists directories the image has first on its PATH
	// (where its Python lives), before the stand-ins and the system's.
	imagePathEnv = "FAKE_DOCKER_IMAGE_PATH"
	// internalEnv marks a start of this binary as the stand-in daemon's
	// supervisor of a container or of an exec.
	internalEnv = "FAKE_DOCKER_INTERNAL"
)

// container is what the daemon keeps about a container, in
// <state>/containers/<id>/config.json.
type container struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Image       string            `json:"image"`
	Entrypoint  []string          `json:"entrypoint"`
	Args        []string          `json:"args"`
	Env         []string          `json:"env"`
	Labels      map[string]string `json:"labels"`
	Ports       []portBinding     `json:"ports"`
	AutoRemove  bool              `json:"auto_remove"`
	StopTimeout int               `json:"stop_timeout"`
	Privileged  bool              `json:"privileged,omitempty"`
	NetworkMode string            `json:"network_mode,omitempty"`
	Created     time.Time         `json:"created"`
	// Mounts are the paths -v mounted into the container, and HostDir
	// the directory `docker run` ran in: the job's own files, which a
	// real container does not see unless they are under a mount.
	Mounts  []string `json:"mounts,omitempty"`
	HostDir string   `json:"host_dir,omitempty"`
}

// portBinding is one published port.
type portBinding struct {
	HostIP        string `json:"host_ip"`
	HostPort      string `json:"host_port"`
	ContainerPort string `json:"container_port"` // "8000/tcp"
}

// status is the state file the supervisor keeps, <dir>/status.json.
type status struct {
	Running    bool      `json:"running"`
	Pid        int       `json:"pid"`        // the entrypoint process, leader of the container's group
	ShimPid    int       `json:"shim_pid"`   // its supervisor
	ExitCode   int       `json:"exit_code"`  // once ended
	StartedAt  time.Time `json:"started_at"` // zero: never started
	FinishedAt time.Time `json:"finished_at"`
}

// store is the daemon's state directory.
type store struct{ root string }

func newStore(getenv func(string) string) (*store, error) {
	root := getenv(stateEnv)
	if root == "" {
		home := getenv("HOME")
		if home == "" {
			return nil, errors.New("fake docker: neither " + stateEnv + " nor HOME is set")
		}
		root = filepath.Join(home, ".fake-docker")
	}
	if err := os.MkdirAll(filepath.Join(root, "containers"), 0o755); err != nil {
		return nil, fmt.Errorf("fake docker: create state directory: %w", err)
	}
	return &store{root: root}, nil
}

func (s *store) dir(id string) string { return filepath.Join(s.root, "containers", id) }

// lock serialises name reservation and removal across processes.
func (s *store) lock() (unlock func(), err error) {
	f, err := os.OpenFile(filepath.Join(s.root, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("fake docker: lock state: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("fake docker: lock state: %w", err)
	}
	return func() { f.Close() }, nil
}

// all lists the containers, newest first.
func (s *store) all() []*container {
	entries, _ := os.ReadDir(filepath.Join(s.root, "containers"))
	var out []*container
	for _, e := range entries {
		c, err := s.load(e.Name())
		if err == nil {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.After(out[j].Created) })
	return out
}

func (s *store) load(id string) (*container, error) {
	data, err := os.ReadFile(filepath.Join(s.dir(id), "config.json"))
	if err != nil {
		return nil, err
	}
	var c container
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// find resolves a reference as the daemon does: full ID, then name (with
// or without the leading "/"), then a unique ID prefix.
func (s *store) find(ref string) (*container, error) {
	all := s.all()
	for _, c := range all {
		if c.ID == ref {
			return c, nil
		}
	}
	name := strings.TrimPrefix(ref, "/")
	for _, c := range all {
		if c.Name == name {
			return c, nil
		}
	}
	var match []*container
	for _, c := range all {
		if ref != "" && strings.HasPrefix(c.ID, ref) {
			match = append(match, c)
		}
	}
	switch len(match) {
	case 0:
		return nil, noSuchContainer(ref)
	case 1:
		return match[0], nil
	}
	return nil, daemonErr("multiple IDs found with provided prefix: %s", ref)
}

// status reads a container's state. A supervisor that died without saying
// how the container ended leaves it exited with status 255.
func (s *store) status(id string) status {
	var st status
	data, err := os.ReadFile(filepath.Join(s.dir(id), "status.json"))
	if err != nil || json.Unmarshal(data, &st) != nil {
		return status{}
	}
	if st.Running && !alive(st.ShimPid) {
		st.Running, st.ExitCode = false, 255
	}
	return st
}

// writeStatus replaces the state file atomically.
func (s *store) writeStatus(id string, st status) error {
	return writeJSON(filepath.Join(s.dir(id), "status.json"), st)
}

func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// alive says whether a process exists (and is not a zombie).
func alive(pid int) bool {
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: kill(0) is all there is
	}
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	f := strings.Fields(rest)
	return len(f) == 0 || (f[0] != "Z" && f[0] != "X")
}

// waitEnded polls until the container is no longer running or is gone.
func (s *store) waitEnded(id string, bound time.Duration) bool {
	deadline := time.Now().Add(bound)
	for {
		if _, err := os.Stat(s.dir(id)); err != nil || !s.status(id).Running {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// newID is a container or exec ID: 64 hex digits.
func newID() string {
	b := make([]byte, 32)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func shortID(id string) string { return id[:12] }
