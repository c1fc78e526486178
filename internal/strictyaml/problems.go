package strictyaml

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Problem is one finding, positioned in its file.
type Problem struct {
	File    string
	Line    int
	Col     int
	Msg     string
	Warning bool
}

func (p Problem) Error() string {
	prefix := ""
	if p.Warning {
		prefix = "warning: "
	}
	return fmt.Sprintf("%s:%d:%d: %s%s", p.File, p.Line, p.Col, prefix, p.Msg)
}

// Problems is every finding of one or more files, in file then line order.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.Is(err, ErrInvalid) classify a Problems value.
func (ps Problems) Unwrap() error { return ErrInvalid }

// Errors returns only the problems that are not warnings.
func (ps Problems) Errors() Problems {
	var out Problems
	for _, p := range ps {
		if !p.Warning {
			out = append(out, p)
		}
	}
	return out
}

// Warnings returns only the warnings.
func (ps Problems) Warnings() Problems {
	var out Problems
	for _, p := range ps {
		if p.Warning {
			out = append(out, p)
		}
	}
	return out
}

// Sort orders problems by file, line and column, keeping equal ones stable.
func (ps Problems) Sort() {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

func (d *Decoder) add(line, col int, warning bool, format string, args ...any) {
	if d.exhausted {
		return
	}
	d.Problems = append(d.Problems, Problem{File: d.File, Line: line, Col: col, Msg: fmt.Sprintf(format, args...), Warning: warning})
}

// Errorf records an error at node n.
func (d *Decoder) Errorf(n *yaml.Node, format string, args ...any) {
	d.add(n.Line, n.Column, false, format, args...)
}

// Warnf records a warning at node n.
func (d *Decoder) Warnf(n *yaml.Node, format string, args ...any) {
	d.add(n.Line, n.Column, true, format, args...)
}

// ErrorAt records an error at an explicit position.
func (d *Decoder) ErrorAt(line, col int, format string, args ...any) {
	d.add(line, col, false, format, args...)
}

// WarnAt records a warning at an explicit position.
func (d *Decoder) WarnAt(line, col int, format string, args ...any) {
	d.add(line, col, true, format, args...)
}

// Describe names what a node holds, for messages.
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:37] + "..."
	}
	switch n.ShortTag() {
	case "!!null":
		return "null"
	case "!!bool":
		return "boolean " + v
	case "!!int":
		return "integer " + v
	case "!!float":
		return "number " + v
	case "!!str":
		return strconv.Quote(v)
	}
	return n.ShortTag() + " " + strconv.Quote(v)
}

// Locate finds where text occurs in the source at or after node n's line,
// for positions inside a scalar (one word of a folded block). It falls back
// to the node's own position.
func (d *Decoder) Locate(n *yaml.Node, text string) (line, col int) {
	if d.lines == nil {
		d.lines = bytes.Split(d.Src, []byte("\n"))
	}
	if text != "" {
		end := n.Line - 1 + strings.Count(n.Value, "\n") + 64
		for i := n.Line - 1; i >= 0 && i < len(d.lines) && i <= end; i++ {
			line := d.lines[i]
			skip := 0 // on the node's first line, what precedes the node
			if i == n.Line-1 {
				skip = byteOffset(line, n.Column-1)
			}
			if c := bytes.Index(line[skip:], []byte(text)); c >= 0 {
				return i + 1, utf8.RuneCount(line[:skip+c]) + 1
			}
		}
	}
	return n.Line, n.Column
}

// byteOffset converts a count of runes from the start of line into a byte
// index: columns count runes, slices count bytes.
func byteOffset(line []byte, runes int) int {
	off := 0
	for ; runes > 0 && off < len(line); runes-- {
		_, size := utf8.DecodeRune(line[off:])
		off += size
	}
	return off
}
