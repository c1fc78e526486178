package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/docker/cli/opts"
)

// ps is `docker ps -q [-a] [--no-trunc] [--filter K=V]...`: IDs of the
// running (with -a: all) containers, newest first.
func (d *daemon) ps(args []string) error {
	c := newCommand("ps", "ps [OPTIONS]", true, 0, 0, d.stderr)
	f := c.flags
	quiet := f.BoolP("quiet", "q", false, "")
	f.BoolP("size", "s", false, "")
	all := f.BoolP("all", "a", false, "")
	noTrunc := f.Bool("no-trunc", false, "")
	f.BoolP("latest", "l", false, "")
	f.IntP("last", "n", -1, "")
	f.String("format", "", "")
	filter := opts.NewFilterOpt()
	f.VarP(&filter, "filter", "f", "")
	c.support("quiet", "all", "no-trunc", "filter")
	if _, err := c.parse(args); err != nil {
		return err
	}
	if !*quiet {
		return stubErr("docker ps prints only IDs here (-q); its table is not emulated")
	}
	filters := filter.Value()
	for key, values := range filters {
		switch key {
		case "label", "name", "id":
		case "status":
			for v := range values {
				switch v {
				case "created", "restarting", "running", "removing", "paused", "exited", "dead":
				default:
					return daemonErr("invalid filter 'status=%s'", v)
				}
			}
		default:
			return daemonErr("invalid filter '%s'", key)
		}
	}
	st, err := d.store()
	if err != nil {
		return err
	}
	for _, ctr := range st.all() {
		s := st.status(ctr.ID)
		state := "exited"
		if s.Running {
			state = "running"
		} else if s.StartedAt.IsZero() && s.FinishedAt.IsZero() {
			state = "created"
		}
		if !*all && !s.Running && len(filters["status"]) == 0 {
			continue
		}
		if !matches(ctr, state, filters) {
			continue
		}
		id := shortID(ctr.ID)
		if *noTrunc {
			id = ctr.ID
		}
		fmt.Fprintln(d.stdout, id)
	}
	return nil
}

// matches applies the daemon's filters: every label one must hold; any of
// the names (regular expressions), IDs (prefixes) or states may.
func matches(ctr *container, state string, filters map[string]map[string]bool) bool {
	for l := range filters["label"] {
		k, v, hasValue := strings.Cut(l, "=")
		got, ok := ctr.Labels[k]
		if !ok || hasValue && got != v {
			return false
		}
	}
	anyOf := func(key string, match func(string) bool) bool {
		if len(filters[key]) == 0 {
			return true
		}
		for v := range filters[key] {
			if match(v) {
				return true
			}
		}
		return false
	}
	return anyOf("name", func(v string) bool {
		re, err := regexp.Compile(v)
		return err == nil && re.MatchString("/"+ctr.Name)
	}) && anyOf("id", func(v string) bool { return strings.HasPrefix(ctr.ID, v) }) &&
		anyOf("status", func(v string) bool { return v == state })
}
