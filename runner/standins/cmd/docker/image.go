package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/template"

	"github.com/distribution/reference"
	"github.com/docker/cli/opts"
)

// image is what the daemon keeps about an image: pulled ones have
// repository digests, built ones only tags. BuildArgs are the values a
// build got, kept for tests (the real daemon keeps them in the history).
type image struct {
	ID          string            `json:"Id"`
	RepoTags    []string          `json:"RepoTags"`
	RepoDigests []string          `json:"RepoDigests"`
	BuildArgs   map[string]string `json:"-"`
}

// imageRecord is the stored form, BuildArgs included.
type imageRecord struct {
	image
	Args map[string]string `json:"build_args,omitempty"`
}

func (s *store) imagesPath() string { return filepath.Join(s.root, "images.json") }

func (s *store) images() []imageRecord {
	var out []imageRecord
	data, err := os.ReadFile(s.imagesPath())
	if err == nil {
		_ = json.Unmarshal(data, &out)
	}
	return out
}

// findImage finds an image by tag, digest reference or ID, as docker
// resolves a name (a bare name means :latest).
func (s *store) findImage(ref string) (*imageRecord, bool) {
	want := ref
	if n, err := reference.ParseNormalizedNamed(ref); err == nil {
		want = reference.FamiliarString(reference.TagNameOnly(n))
	}
	for _, im := range s.images() {
		if slices.Contains(im.RepoTags, want) || slices.Contains(im.RepoDigests, ref) || im.ID == ref || strings.TrimPrefix(im.ID, "sha256:") == ref {
			return &im, true
		}
	}
	return nil, false
}

// putImage stores im, moving its tags off older images as docker does.
func (s *store) putImage(im imageRecord) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	var out []imageRecord
	for _, old := range s.images() {
		if old.ID == im.ID {
			continue
		}
		old.RepoTags = slices.DeleteFunc(old.RepoTags, func(t string) bool { return slices.Contains(im.RepoTags, t) })
		out = append(out, old)
	}
	out = append(out, im)
	return writeJSON(s.imagesPath(), out)
}

func digestOf(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// pulled makes sure a run's image is in the store: the one built or
// pulled before, else pulled now, with the digest the registry would
// give (the reference's own when it names one).
func (s *store) pulled(ref string) error {
	if _, ok := s.findImage(ref); ok {
		return nil
	}
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return err
	}
	dig := digestOf("manifest", reference.FamiliarString(reference.TagNameOnly(n)))
	if c, ok := n.(reference.Canonical); ok {
		dig = c.Digest().String()
	}
	im := imageRecord{image: image{ID: digestOf("config", ref), RepoDigests: []string{reference.FamiliarName(n) + "@" + dig}}}
	if t, ok := reference.TagNameOnly(n).(reference.Tagged); ok {
		if _, canonical := n.(reference.Canonical); !canonical {
			im.RepoTags = []string{reference.FamiliarName(n) + ":" + t.Tag()}
		}
	}
	return s.putImage(im)
}

// build is `docker build` as the classic builder runs it: the context
// must be a directory, the Dockerfile must exist and start with FROM (or
// ARG), and the image gets the tags. What the Dockerfile's RUN lines
// would do is not emulated: the image is the stand-in vLLM.
func (d *daemon) build(args []string) error {
	c, o := newBuildCommand(d.stderr)
	pos, err := c.parse(args)
	if err != nil {
		return err
	}
	src, err := readDockerfile(pos[0], *o.file)
	if err != nil {
		return err
	}
	declared, err := dockerfileArgs(src)
	if err != nil {
		return &cliError{msg: "Error response from daemon: " + err.Error(), code: 1}
	}
	tags := o.tags.GetSlice()
	for _, t := range tags {
		if _, err := reference.ParseNormalizedNamed(t); err != nil {
			return &cliError{msg: fmt.Sprintf("invalid argument %q for \"-t, --tag\" flag: %v", t, err), code: 125}
		}
	}
	values, unused := buildArgValues(o.buildArgs.GetSlice(), declared)
	if len(unused) > 0 {
		fmt.Fprintf(d.stdout, "[Warning] One or more build-args %v were not consumed\n", unused)
	}
	im := builtImage(src, values, tags)
	st, err := d.store()
	if err != nil {
		return err
	}
	if err := st.putImage(im); err != nil {
		return fmt.Errorf("fake docker: %w", err)
	}
	fmt.Fprintf(d.stdout, "Successfully built %s\n", strings.TrimPrefix(im.ID, "sha256:")[:12])
	for _, t := range im.RepoTags {
		fmt.Fprintf(d.stdout, "Successfully tagged %s\n", t)
	}
	return nil
}

// buildOptions holds the flags of `docker build` the stand-in acts on.
type buildOptions struct {
	file                    *string
	tags, buildArgs, labels opts.ListOpts
}

// newBuildCommand declares the flags of `docker build` the runner may
// pass; those it acts on are marked supported.
func newBuildCommand(stderr io.Writer) (*command, *buildOptions) {
	c := newCommand("build", "build [OPTIONS] PATH | URL | -", true, 1, 1, stderr)
	f := c.flags
	o := &buildOptions{
		tags:      opts.NewListOpts(nil),
		buildArgs: opts.NewListOpts(opts.ValidateEnv),
		labels:    opts.NewListOpts(opts.ValidateLabel),
	}
	o.file = f.StringP("file", "f", "", "")
	f.VarP(&o.tags, "tag", "t", "")
	f.Var(&o.buildArgs, "build-arg", "")
	f.Var(&o.labels, "label", "")
	f.BoolP("quiet", "q", false, "")
	f.String("iidfile", "", "")
	f.Bool("pull", false, "")
	f.Bool("no-cache", false, "")
	f.String("platform", "", "")
	f.String("target", "", "")
	f.String("network", "default", "")
	c.support("file", "tag", "build-arg", "label")
	return c, o
}

// readDockerfile reads the Dockerfile of the context ctxDir: file, or
// the context's Dockerfile when file is empty.
func readDockerfile(ctxDir, file string) ([]byte, error) {
	if st, err := os.Stat(ctxDir); err != nil || !st.IsDir() {
		return nil, &cliError{msg: fmt.Sprintf("unable to prepare context: path %q not found", ctxDir), code: 1}
	}
	if file == "" {
		file = filepath.Join(ctxDir, "Dockerfile")
	}
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, &cliError{msg: fmt.Sprintf("unable to prepare context: unable to evaluate symlinks in Dockerfile path: lstat %s: no such file or directory", file), code: 1}
	}
	return src, nil
}

// buildArgValues are the --build-arg values by name, and the names, sorted,
// the Dockerfile does not declare.
func buildArgValues(buildArgs, declared []string) (values map[string]string, unused []string) {
	values = map[string]string{}
	for _, kv := range buildArgs {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue // a bare NAME not set in docker's environment is dropped
		}
		values[name] = val
		if !slices.Contains(declared, name) {
			unused = append(unused, name)
		}
	}
	sort.Strings(unused)
	return values, unused
}

// builtImage is the image a build of src with the build args makes: its
// ID a digest of both, tagged with each tag in its familiar form.
func builtImage(src []byte, values map[string]string, tags []string) imageRecord {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := []string{string(src)}
	for _, k := range keys {
		parts = append(parts, k+"="+values[k])
	}
	im := imageRecord{image: image{ID: digestOf(parts...), RepoTags: []string{}, RepoDigests: []string{}}, Args: values}
	for _, t := range tags {
		n, _ := reference.ParseNormalizedNamed(t)
		im.RepoTags = append(im.RepoTags, reference.FamiliarString(reference.TagNameOnly(n)))
	}
	return im
}

// dockerfileArgs checks that the first instruction is FROM or ARG, as the
// builder does, and lists the ARG names.
func dockerfileArgs(src []byte) ([]string, error) {
	var args []string
	first := true
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		word, rest, _ := strings.Cut(line, " ")
		word = strings.ToUpper(word)
		if first && word != "FROM" && word != "ARG" {
			return nil, fmt.Errorf("dockerfile parse error: no build stage in current context")
		}
		first = false
		if word == "ARG" {
			name, _, _ := strings.Cut(strings.TrimSpace(rest), "=")
			args = append(args, name)
		}
	}
	if first {
		return nil, fmt.Errorf("the Dockerfile cannot be empty")
	}
	return args, nil
}

// imageCmd is `docker image inspect`.
func (d *daemon) imageCmd(args []string) error {
	if len(args) == 0 || args[0] != "inspect" {
		return stubErr("docker image %s is not emulated (only inspect)", strings.Join(args, " "))
	}
	c := newCommand("image inspect", "image inspect [OPTIONS] IMAGE [IMAGE...]", true, 1, -1, d.stderr)
	format := c.flags.StringP("format", "f", "", "")
	c.support("format")
	pos, err := c.parse(args[1:])
	if err != nil {
		return err
	}
	st, err := d.store()
	if err != nil {
		return err
	}
	var tmpl *template.Template
	if *format != "" && *format != "json" {
		if tmpl, err = template.New("").Funcs(templateFuncs).Parse(*format); err != nil {
			return &cliError{msg: fmt.Sprintf("template parsing error: %v", err), code: 64}
		}
	}
	var out bytes.Buffer
	var objs []image
	var errs []error
	for _, ref := range pos {
		im, ok := st.findImage(ref)
		if !ok {
			errs = append(errs, fmt.Errorf("Error response from daemon: No such image: %s", ref))
			continue
		}
		if tmpl == nil {
			objs = append(objs, im.image)
			continue
		}
		if err := tmpl.Execute(&out, im.image); err != nil {
			errs = append(errs, fmt.Errorf("template parsing error: %w", err))
			continue
		}
		out.WriteByte('\n')
	}
	if tmpl == nil {
		if objs == nil {
			objs = []image{}
		}
		b, _ := json.MarshalIndent(objs, "", "    ")
		out.Write(append(b, '\n'))
	}
	_, _ = d.stdout.Write(out.Bytes())
	return joined(errs)
}
