// Package argparse parses command lines the way Python's argparse does for
// the options the stand-in tools declare: long options with "=" or a
// separate value, unique-prefix abbreviations, nargs "*", "+" and "?", and
// the same error messages and exit status 2 for anything it does not know.
// Underscores and dashes in option names are interchangeable, as with
// vLLM's FlexibleArgumentParser.
package argparse

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Kind says how many values an option takes.
type Kind int

const (
	Bool     Kind = iota // store_true
	Value                // exactly one value
	Optional             // nargs="?": zero or one value
	List                 // nargs="*"
	ListPlus             // nargs="+"
)

// Parser holds the declared options of one program.
type Parser struct {
	prog  string
	specs []*spec
	index map[string]*spec
}

type spec struct {
	names []string // as declared, e.g. "--num-prompts", "-n"
	kind  Kind
}

// New returns a parser for prog, used in usage and error lines.
func New(prog string) *Parser { return &Parser{prog: prog, index: map[string]*spec{}} }

// Add declares an option under one or more names; the first name is the one
// Result methods take.
func (p *Parser) Add(kind Kind, names ...string) {
	s := &spec{names: names, kind: kind}
	p.specs = append(p.specs, s)
	for _, n := range names {
		p.index[canonical(n)] = s
	}
}

// Error is a usage error; main prints it and exits with status 2.
type Error struct {
	Prog string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Print writes the error as argparse does.
func (e *Error) Print(w io.Writer) {
	fmt.Fprintf(w, "usage: %s [options]\n%s: error: %s\n", e.Prog, e.Prog, e.Msg)
}

// Result maps each option's first declared name to the values it was given,
// in order; a Bool option that was present maps to an empty slice.
type Result struct {
	prog   string
	values map[string][]string
}

// Parse parses args. Unknown options and stray arguments are all reported
// together, like argparse's "unrecognized arguments".
func (p *Parser) Parse(args []string) (*Result, error) {
	r := &Result{prog: p.prog, values: map[string][]string{}}
	var unknown []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if !isOption(arg) {
			unknown = append(unknown, arg)
			continue
		}
		name, inline, hasInline := strings.Cut(arg, "=")
		s, err := p.lookup(name)
		if err != nil {
			return nil, err
		}
		if s == nil {
			unknown = append(unknown, arg)
			continue
		}
		key := s.names[0]
		shown := s.names[0]
		if strings.HasPrefix(name, "--") {
			shown = s.longest()
		}
		if hasInline {
			if s.kind == Bool {
				return nil, p.errorf("argument %s: ignored explicit argument '%s'", shown, inline)
			}
			r.values[key] = append(r.values[key], inline)
			continue
		}
		switch s.kind {
		case Bool:
			r.values[key] = []string{}
		case Value:
			if i+1 >= len(args) || isOption(args[i+1]) {
				return nil, p.errorf("argument %s: expected one argument", shown)
			}
			i++
			r.values[key] = []string{args[i]}
		case Optional:
			r.values[key] = []string{}
			if i+1 < len(args) && !isOption(args[i+1]) {
				i++
				r.values[key] = []string{args[i]}
			}
		case List, ListPlus:
			vals := []string{}
			for i+1 < len(args) && !isOption(args[i+1]) {
				i++
				vals = append(vals, args[i])
			}
			if s.kind == ListPlus && len(vals) == 0 {
				return nil, p.errorf("argument %s: expected at least one argument", shown)
			}
			r.values[key] = vals
		}
	}
	if len(unknown) > 0 {
		return nil, p.errorf("unrecognized arguments: %s", strings.Join(unknown, " "))
	}
	return r, nil
}

func (s *spec) longest() string {
	for _, n := range s.names {
		if strings.HasPrefix(n, "--") {
			return n
		}
	}
	return s.names[0]
}

// lookup finds an option by exact name or unique prefix.
func (p *Parser) lookup(name string) (*spec, error) {
	c := canonical(name)
	if s, ok := p.index[c]; ok {
		return s, nil
	}
	if !strings.HasPrefix(c, "--") {
		return nil, nil
	}
	var matches []string
	var found *spec
	for _, s := range p.specs {
		for _, n := range s.names {
			if strings.HasPrefix(canonical(n), c) {
				matches = append(matches, n)
				found = s
			}
		}
	}
	switch len(matches) {
	case 0:
		return nil, nil
	case 1:
		return found, nil
	default:
		slices.Sort(matches)
		return nil, p.errorf("ambiguous option: %s could match %s", name, strings.Join(matches, ", "))
	}
}

func (p *Parser) errorf(format string, args ...any) *Error {
	return &Error{Prog: p.prog, Msg: fmt.Sprintf(format, args...)}
}

// canonical folds underscores into dashes after the leading dashes.
func canonical(name string) string {
	trimmed := strings.TrimLeft(name, "-")
	return name[:len(name)-len(trimmed)] + strings.ReplaceAll(trimmed, "_", "-")
}

// isOption reports whether arg looks like an option rather than a value;
// negative numbers are values, as in argparse.
func isOption(arg string) bool {
	if len(arg) < 2 || arg[0] != '-' {
		return false
	}
	_, err := strconv.ParseFloat(arg, 64)
	return err != nil
}

// Has reports whether the option was given.
func (r *Result) Has(name string) bool {
	_, ok := r.values[name]
	return ok
}

// Bool reports whether a Bool option was given.
func (r *Result) Bool(name string) bool { return r.Has(name) }

// String returns the option's last value, or def.
func (r *Result) String(name, def string) string {
	if v := r.values[name]; len(v) > 0 {
		return v[len(v)-1]
	}
	return def
}

// Strings returns every value given to a list option.
func (r *Result) Strings(name string) []string { return slices.Clone(r.values[name]) }

// Int returns the option as an int, or def when absent.
func (r *Result) Int(name string, def int) (int, error) {
	v, ok := r.last(name)
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, &Error{Prog: r.prog, Msg: fmt.Sprintf("argument %s: invalid int value: '%s'", name, v)}
	}
	return n, nil
}

// Float returns the option as a float (accepting "inf"), or def when absent.
func (r *Result) Float(name string, def float64) (float64, error) {
	v, ok := r.last(name)
	if !ok {
		return def, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, &Error{Prog: r.prog, Msg: fmt.Sprintf("argument %s: invalid float value: '%s'", name, v)}
	}
	return f, nil
}

// Choice returns the option's value after checking it against choices.
func (r *Result) Choice(name, def string, choices ...string) (string, error) {
	v := r.String(name, def)
	if !slices.Contains(choices, v) {
		quoted := make([]string, len(choices))
		for i, c := range choices {
			quoted[i] = "'" + c + "'"
		}
		return "", &Error{Prog: r.prog, Msg: fmt.Sprintf("argument %s: invalid choice: '%s' (choose from %s)", name, v, strings.Join(quoted, ", "))}
	}
	return v, nil
}

func (r *Result) last(name string) (string, bool) {
	v := r.values[name]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}
