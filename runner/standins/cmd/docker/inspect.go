package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"time"
)

// inspectState is the State of docker's container inspect JSON.
type inspectState struct {
	Status     string
	Running    bool
	Paused     bool
	Restarting bool
	OOMKilled  bool
	Dead       bool
	Pid        int
	ExitCode   int
	Error      string
	StartedAt  string
	FinishedAt string
}

// inspectData is the part of docker's container inspect JSON the
// stand-in knows; a template naming another field fails.
type inspectData struct {
	ID      string `json:"Id"`
	Created string
	Path    string
	Args    []string
	State   inspectState
	Name    string
	Config  struct {
		Hostname   string
		Env        []string
		Cmd        []string
		Image      string
		Entrypoint []string
		Labels     map[string]string
	}
	HostConfig struct {
		AutoRemove bool
	}
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return "0001-01-01T00:00:00Z"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func (st *store) inspectOf(ctr *container) inspectData {
	s := st.status(ctr.ID)
	var d inspectData
	d.ID, d.Created, d.Name = ctr.ID, rfc3339(ctr.Created), "/"+ctr.Name
	d.Path, d.Args = ctr.Entrypoint[0], append(ctr.Entrypoint[1:], ctr.Args...)
	d.State = inspectState{Status: "exited", Running: s.Running, Pid: s.Pid, ExitCode: s.ExitCode, StartedAt: rfc3339(s.StartedAt), FinishedAt: rfc3339(s.FinishedAt)}
	switch {
	case s.Running:
		d.State.Status = "running"
	case s.StartedAt.IsZero() && s.FinishedAt.IsZero():
		d.State.Status = "created"
	}
	d.Config.Hostname, d.Config.Env, d.Config.Cmd = shortID(ctr.ID), ctr.Env, ctr.Args
	d.Config.Image, d.Config.Entrypoint, d.Config.Labels = ctr.Image, ctr.Entrypoint, ctr.Labels
	d.HostConfig.AutoRemove = ctr.AutoRemove
	return d
}

// templateFuncs are docker's template functions the stand-in provides.
var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	"join":  strings.Join,
	"split": strings.Split,
	"lower": strings.ToLower,
	"upper": strings.ToUpper,
}

// inspect is `docker inspect [-f FORMAT] [--type container] NAME...`.
func (d *daemon) inspect(args []string) error {
	c := newCommand("inspect", "inspect [OPTIONS] NAME|ID [NAME|ID...]", true, 1, -1, d.stderr)
	f := c.flags
	format := f.StringP("format", "f", "", "")
	f.BoolP("size", "s", false, "")
	typ := f.String("type", "", "")
	c.support("format", "type")
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	switch *typ {
	case "", "container":
	case "config", "image", "network", "node", "plugin", "secret", "service", "task", "volume":
		return stubErr("docker inspect --type %s is not emulated", *typ)
	default:
		return &cliError{msg: fmt.Sprintf(`unknown type: %q: must be one of "config", "container", "image", "node", "network", "secret", "service", "volume", "task", "plugin"`, *typ), code: 1}
	}
	var tmpl *template.Template
	if *format != "" && *format != "json" {
		tmpl, err = template.New("").Funcs(templateFuncs).Parse(*format)
		if err != nil {
			return &cliError{msg: fmt.Sprintf("template parsing error: %v", err), code: 64}
		}
	}
	st, err := d.store()
	if err != nil {
		return err
	}
	var out bytes.Buffer
	var objs []inspectData
	var errs []error
	for _, ref := range pos {
		ctr, err := st.find(ref)
		if err != nil {
			if *typ == "container" {
				errs = append(errs, err)
			} else {
				errs = append(errs, fmt.Errorf("error: no such object: %s", ref))
			}
			continue
		}
		obj := st.inspectOf(ctr)
		if tmpl == nil {
			objs = append(objs, obj)
			continue
		}
		if err := tmpl.Execute(&out, obj); err != nil {
			errs = append(errs, fmt.Errorf("template parsing error: %w", err))
			continue
		}
		out.WriteByte('\n')
	}
	if tmpl == nil {
		if objs == nil {
			objs = []inspectData{}
		}
		b, _ := json.MarshalIndent(objs, "", "    ")
		out.Write(append(b, '\n'))
	}
	_, _ = d.stdout.Write(out.Bytes())
	return joined(errs)
}
