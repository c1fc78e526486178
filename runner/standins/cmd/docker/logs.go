package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// logs is `docker logs [OPTIONS] CONTAINER`: the container's output from
// its start, each line on the stream it was written to; with -f it follows
// until the container ends, then exits 0.
func (d *daemon) logs(args []string) error {
	c := newCommand("logs", "logs [OPTIONS] CONTAINER", true, 1, 1, d.stderr)
	f := c.flags
	follow := f.BoolP("follow", "f", false, "")
	f.String("since", "", "")
	f.String("until", "", "")
	f.BoolP("timestamps", "t", false, "")
	f.Bool("details", false, "")
	tail := f.StringP("tail", "n", "all", "")
	c.support("follow", "tail")
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
	file, err := os.Open(filepath.Join(st.dir(ctr.ID), "log.jsonl"))
	if err != nil {
		return nil // never started: no output
	}
	defer file.Close()
	skip := 0
	if *tail != "all" {
		n, err := strconv.Atoi(*tail)
		if err == nil && n >= 0 {
			total := countLines(filepath.Join(st.dir(ctr.ID), "log.jsonl"))
			skip = max(total-n, 0)
		}
		// The daemon treats any other value as "all".
	}
	r := bufio.NewReader(file)
	var partial []byte
	for {
		chunk, err := r.ReadBytes('\n')
		partial = append(partial, chunk...)
		if err == nil {
			if skip > 0 {
				skip--
			} else {
				d.writeEntry(partial)
			}
			partial = nil
			continue
		}
		if err != io.EOF {
			return err
		}
		if !*follow {
			return nil
		}
		// Drain what the container wrote before it ended, then stop.
		if _, statErr := os.Stat(st.dir(ctr.ID)); statErr != nil || !st.status(ctr.ID).Running {
			rest, _ := io.ReadAll(r)
			partial = append(partial, rest...)
			for _, line := range splitLines(partial) {
				d.writeEntry(line)
			}
			return nil
		}
		// Short: a follower lagging behind the container's end loses
		// lines to whoever stops it next.
		time.Sleep(5 * time.Millisecond)
	}
}

func (d *daemon) writeEntry(line []byte) {
	var e logEntry
	if json.Unmarshal(line, &e) != nil {
		return
	}
	w := d.stdout
	if e.Stream == "stderr" {
		w = d.stderr
	}
	_, _ = io.WriteString(w, e.Log)
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		if i == len(b) {
			out = append(out, b)
			break
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

func countLines(path string) int {
	data, _ := os.ReadFile(path)
	n := 0
	for _, c := range data {
		if c == '\n' {
			n++
		}
	}
	return n
}
