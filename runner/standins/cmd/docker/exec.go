package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/docker/cli/opts"
)

// exec is `docker exec [OPTIONS] CONTAINER COMMAND [ARG...]`: the command
// runs with the container's environment plus -e, in the container, so it
// outlives this command: like the real CLI, a signal ends `docker exec`
// but not what it started. With -i the command reads this command's
// stdin; without, it reads nothing.
func (d *daemon) exec(args []string) error {
	c := newCommand("exec", "exec [OPTIONS] CONTAINER COMMAND [ARG...]", false, 2, -1, d.stderr)
	env := opts.NewListOpts(opts.ValidateEnv)
	envFile := opts.NewListOpts(nil)
	f := c.flags
	f.String("detach-keys", "", "")
	interactive := f.BoolP("interactive", "i", false, "")
	f.BoolP("tty", "t", false, "")
	f.BoolP("detach", "d", false, "")
	f.StringP("user", "u", "", "")
	f.Bool("privileged", false, "")
	f.VarP(&env, "env", "e", "")
	f.Var(&envFile, "env-file", "")
	f.StringP("workdir", "w", "", "")
	c.support("env", "interactive")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	st, err := d.store()
	if err != nil {
		return err
	}
	ctr, err := st.find(pos[0])
	if err != nil {
		return err
	}
	if !st.status(ctr.ID).Running {
		return daemonErr("container %s is not running", ctr.ID)
	}
	if err := ctr.unmounted(pos[1:]); err != nil {
		return err
	}
	cmdEnv := append([]string{}, ctr.Env...)
	for _, kv := range env.GetSlice() {
		if strings.Contains(kv, "=") {
			cmdEnv = setEnv(cmdEnv, kv)
		}
	}
	eid := newID()
	dir := st.execDir(ctr.ID, eid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("fake docker: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, "config.json"), execConfig{Cmd: pos[1:], Env: cmdEnv, Interactive: *interactive}); err != nil {
		return fmt.Errorf("fake docker: %w", err)
	}
	var stdin io.Reader
	if *interactive {
		stdin = d.stdin
	}
	return d.startExec(st, ctr.ID, eid, cmdEnv, stdin)
}

// startExec starts the exec's supervisor in a session of its own, relays
// its output and returns the command's exit status.
func (d *daemon) startExec(st *store, cid, eid string, env []string, stdin io.Reader) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("fake docker: %w", err)
	}
	var pipes [3][2]*os.File // stdout, stderr, report: read, write ends
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("fake docker: %w", err)
		}
		pipes[i] = [2]*os.File{r, w}
	}
	cmd := exec.Command(self, "exec", cid, eid)
	cmd.Env = append(shimEnv(env), internalEnv+"=exec", stateEnv+"="+st.root)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, pipes[0][1], pipes[1][1]
	cmd.ExtraFiles = []*os.File{pipes[2][1]}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	for _, p := range pipes {
		p[1].Close()
	}
	if err != nil {
		return fmt.Errorf("fake docker: start the exec's supervisor: %w", err)
	}
	var wg sync.WaitGroup
	for i, w := range []io.Writer{d.stdout, d.stderr} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = io.Copy(w, pipes[i][0])
		}()
	}
	line, _ := bufio.NewReader(pipes[2][0]).ReadString('\n')
	wg.Wait()
	_ = cmd.Wait()
	line = strings.TrimSpace(line)
	if msg, ok := strings.CutPrefix(line, "error: "); ok {
		return &cliError{msg: msg, code: 126}
	}
	if s, ok := strings.CutPrefix(line, "exit "); ok {
		code, err := strconv.Atoi(s)
		if err == nil {
			if code == 0 {
				return nil
			}
			return &cliError{code: code}
		}
	}
	return &cliError{msg: "fake docker: the exec's supervisor ended without an exit status", code: 1}
}

// unmounted refuses a command that names a path of the job's own files
// (under the directory `docker run` ran in) that no mount brings into the
// container. The stand-in runs containers on the host's filesystem, where
// such a path would work; in a real container it is the image's path:
// absent, or a file written there is lost with the container.
func (ctr *container) unmounted(argv []string) error {
	if ctr.HostDir == "" {
		return nil
	}
	for _, a := range argv {
		p := a
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			p = v
		}
		if !filepath.IsAbs(p) || !within(ctr.HostDir, p) {
			continue
		}
		mounted := false
		for _, m := range ctr.Mounts {
			if within(m, p) {
				mounted = true
				break
			}
		}
		if !mounted {
			return &cliError{code: 126, msg: fmt.Sprintf("fake docker: exec %s: %s is a path of the job's files that no -v mounts into container %s (mounted: %s); a real container would not see the host's file there", argv[0], p, ctr.Name, strings.Join(ctr.Mounts, ", "))}
		}
	}
	return nil
}

// within says whether p is dir or under it.
func within(dir, p string) bool {
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(p))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
