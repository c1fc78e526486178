package workloads

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/benchkite/benchkite/agents"
	"github.com/benchkite/benchkite/internal/strictyaml"
	"gopkg.in/yaml.v3"
)

// DefaultDir is where recipes live in a checkout.
const DefaultDir = "workloads"

// Problem and Problems are re-exported so callers need one import.
type (
	Problem  = strictyaml.Problem
	Problems = strictyaml.Problems
)

// ErrInvalid classifies load failures: errors.Is(err, ErrInvalid).
var ErrInvalid = strictyaml.ErrInvalid

type baselineRef struct {
	name string
	node *yaml.Node
}

// loader holds the state of decoding one file.
type loader struct {
	d           *strictyaml.Decoder
	profiles    *agents.Set
	nameNode    *yaml.Node
	numGPUsNode *yaml.Node
	bfclNode    *yaml.Node
	// serveArgsUnread is set when serve_args is there but could not be
	// read (not a string, or not an argument list): checks of which
	// flags it holds would then report flags it may well hold.
	serveArgsUnread bool
	nodes           laterNodes
	baselineRefs    []baselineRef
	// metricRefs are the bench keys assertions and regressions name,
	// checked once the whole recipe is known.
	metricRefs []metricRef
	// config is the bench config being decoded, -1 outside one.
	config int
	// benchItems is how many configs the file lists.
	benchItems int
}

// metricRef is a bench result key a recipe names, and where.
type metricRef struct {
	node   *yaml.Node
	what   string
	metric string
	config int // -1: bench-wide, for every config
}

// Parse decodes one recipe file. Problems (errors and warnings) come back
// positioned; the recipe is nil when there were errors.
func Parse(file string, src []byte, profiles *agents.Set) (*Recipe, Problems) {
	r, ps, _ := parse(file, src, profiles)
	return r, ps
}

func parse(file string, src []byte, profiles *agents.Set) (*Recipe, Problems, *loader) {
	d, root := strictyaml.Parse(file, src)
	l := &loader{d: d, profiles: profiles, config: -1}
	var r *Recipe
	if root != nil {
		r = l.decodeRecipe(root)
	}
	d.Problems.Sort()
	if len(d.Problems.Errors()) > 0 {
		return nil, d.Problems, l
	}
	return r, d.Problems, l
}

// Catalog is every recipe of a directory, valid or not.
type Catalog struct {
	// Dir is the directory the recipes were read from.
	Dir string
	// Recipes are the valid recipes, sorted by path.
	Recipes []*Recipe
	// Invalid maps the path of each invalid file to its problems.
	Invalid map[string]Problems
	// Warnings are problems that do not stop a recipe from running.
	Warnings Problems
}

// Problems returns every error of every file, in path order.
func (c *Catalog) Problems() Problems {
	var out Problems
	paths := make([]string, 0, len(c.Invalid))
	for p := range c.Invalid {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		out = append(out, c.Invalid[p]...)
	}
	return out
}

// Err is nil when every recipe is valid.
func (c *Catalog) Err() error {
	if ps := c.Problems(); len(ps) > 0 {
		return ps
	}
	return nil
}

// RecipeFiles lists the recipe files of dir: *.yaml, sorted.
func RecipeFiles(fsys fs.FS, dir string) ([]string, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("list recipes in %s: %w", dir, err)
	}
	var files []string
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		files = append(files, path.Join(dir, e.Name()))
	}
	sort.Strings(files)
	return files, nil
}

// LoadDir reads every recipe in dir. A file that cannot be read is an
// error; invalid recipes are collected in the catalog so that one bad file
// does not stop the others from running.
func LoadDir(fsys fs.FS, dir string, profiles *agents.Set) (*Catalog, error) {
	files, err := RecipeFiles(fsys, dir)
	if err != nil {
		return nil, err
	}
	return LoadFiles(fsys, files, profiles, dir)
}

// parsed is one file's outcome. It keeps only the nodes the cross-file
// checks point at, not the loader: on a large catalog holding every file's
// source until the end would weigh on the garbage collector.
type parsed struct {
	recipe       *Recipe
	problems     Problems
	nameNode     *yaml.Node
	baselineRefs []baselineRef
}

// LoadFiles reads the named files, in parallel: on a large catalog YAML
// parsing is the cost, and files are independent.
func LoadFiles(fsys fs.FS, files []string, profiles *agents.Set, dir string) (*Catalog, error) {
	results := make([]parsed, len(files))
	var wg sync.WaitGroup
	next := make(chan int)
	workers := min(runtime.GOMAXPROCS(0), len(files))
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				src, err := readRecipe(fsys, files[i])
				if err != nil {
					// One unreadable file is that file's problem, not the
					// catalog's: the other recipes still run.
					results[i].problems = Problems{{File: files[i], Line: 1, Col: 1, Msg: err.Error()}}
					continue
				}
				r, ps, l := parse(files[i], src, profiles)
				results[i] = parsed{recipe: r, problems: ps, nameNode: l.nameNode, baselineRefs: l.baselineRefs}
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()

	c := &Catalog{Dir: dir, Invalid: map[string]Problems{}}
	for i, p := range results {
		c.Warnings = append(c.Warnings, p.problems.Warnings()...)
		if p.recipe == nil {
			c.Invalid[files[i]] = p.problems.Errors()
			continue
		}
		c.Recipes = append(c.Recipes, p.recipe)
	}
	c.crossCheck(results)
	return c, nil
}

// crossCheck applies the rules that span files: unique names, and
// baseline_from pointing at a recipe that exists.
func (c *Catalog) crossCheck(results []parsed) {
	byRecipe := make(map[*Recipe]*parsed, len(results))
	for i := range results {
		if r := results[i].recipe; r != nil {
			byRecipe[r] = &results[i]
		}
	}
	byName := map[string]*Recipe{}
	for _, r := range c.Recipes {
		if first, dup := byName[r.Name]; dup {
			n := byRecipe[r].nameNode
			c.Invalid[r.Path] = append(c.Invalid[r.Path], Problem{File: r.Path, Line: n.Line, Col: n.Column,
				Msg: fmt.Sprintf("name %q is already used by %s; recipe names must be unique", r.Name, first.Path)})
			continue
		}
		byName[r.Name] = r
	}
	for _, r := range c.Recipes {
		for _, ref := range byRecipe[r].baselineRefs {
			if _, ok := byName[ref.name]; !ok {
				msg := fmt.Sprintf("baseline_from %q names no recipe", ref.name)
				names := make([]string, 0, len(byName))
				for n := range byName {
					if n != r.Name {
						names = append(names, n)
					}
				}
				sort.Strings(names)
				if close := strictyaml.Closest(ref.name, names, 3); len(close) > 0 {
					msg += "; close: " + strings.Join(close, ", ")
				}
				c.Invalid[r.Path] = append(c.Invalid[r.Path], Problem{File: r.Path, Line: ref.node.Line, Col: ref.node.Column, Msg: msg})
			} else if ref.name == r.Name {
				c.Invalid[r.Path] = append(c.Invalid[r.Path], Problem{File: r.Path, Line: ref.node.Line, Col: ref.node.Column,
					Msg: "baseline_from names the recipe itself; use regression for comparisons with its own past nights"})
			}
		}
	}
	kept := c.Recipes[:0]
	for _, r := range c.Recipes {
		if _, bad := c.Invalid[r.Path]; !bad {
			kept = append(kept, r)
		}
	}
	c.Recipes = kept
}

// maxLinkHops bounds a chain of symbolic links, as the kernel does.
const maxLinkHops = 8

// readRecipe reads a recipe file after checkLink allowed it.
func readRecipe(fsys fs.FS, name string) ([]byte, error) {
	if err := checkLink(fsys, name); err != nil {
		return nil, err
	}
	return readLimited(fsys, name)
}

// checkLink follows name while it is a symbolic link and refuses any link
// that leaves the recipe folder: a recipe is what the folder holds, and a
// link to /etc/passwd or ~/.netrc must not be read and quoted back in
// problems. A link may name a file beside it. On a file system that cannot
// read links, there are none to follow.
func checkLink(fsys fs.FS, name string) error {
	cur := name
	for hops := 0; ; hops++ {
		fi, err := fs.Lstat(fsys, cur)
		if err != nil {
			if cur != name {
				return fmt.Errorf("cannot read recipe: symbolic link to %s: %w", path.Base(cur), errors.Unwrap(err))
			}
			return fmt.Errorf("cannot read recipe: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			if !fi.Mode().IsRegular() {
				return fmt.Errorf("cannot read recipe: not a regular file (%s)", fi.Mode().Type())
			}
			return nil
		}
		if hops == maxLinkHops {
			return fmt.Errorf("cannot read recipe: more than %d symbolic links", maxLinkHops)
		}
		target, err := fs.ReadLink(fsys, cur)
		if err != nil {
			return fmt.Errorf("cannot read recipe: %w", err)
		}
		if clean := path.Clean(target); clean == "." || clean == ".." || strings.ContainsAny(clean, `/\`) {
			return fmt.Errorf("is a symbolic link to %q, outside the recipe folder; link only to a file beside it, or copy the file in", target)
		}
		cur = path.Join(path.Dir(cur), path.Clean(target))
	}
}

func readLimited(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("read recipe: %w", err)
	}
	defer f.Close()
	// Size the buffer from Stat when the file says its size: on a large
	// catalog io.ReadAll's doubling costs more than the files themselves.
	// The extra byte lets the read see EOF without growing.
	size := 512
	if fi, err := f.Stat(); err == nil && fi.Size() >= 0 && fi.Size() <= strictyaml.MaxFileSize {
		size = int(fi.Size()) + 1
	}
	// One byte past the limit is enough for the parser to report it.
	r := io.LimitReader(f, strictyaml.MaxFileSize+1)
	src := make([]byte, 0, size)
	for {
		if len(src) == cap(src) {
			src = append(src, 0)[:len(src)]
		}
		n, err := r.Read(src[len(src):cap(src)])
		src = src[:len(src)+n]
		if err == io.EOF {
			return src, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read recipe %s: %w", name, err)
		}
	}
}
