// Package strictyaml decodes YAML through yaml.v3 nodes so that every problem
// carries the file, line and column it came from, and all problems of a file
// are collected in one pass instead of stopping at the first.
package strictyaml

import (
	"bytes"
	"errors"
	"io"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// MaxFileSize bounds what a recipe or profile file may weigh: these are small
// hand-written files, and a bound keeps a hostile file from costing memory.
const MaxFileSize = 1 << 20

// MaxNodes bounds the number of nodes visited, aliases expanded, so an alias
// bomb is an error instead of an allocation storm.
const MaxNodes = 20000

// ErrInvalid marks a decoding that reported problems.
var ErrInvalid = errors.New("invalid YAML")

// Decoder walks a parsed document and records problems against it.
type Decoder struct {
	File     string
	Src      []byte
	Problems Problems
	nodes    int
	lines    [][]byte
	// exhausted is set once the node bound is passed: what the decoder
	// would report afterwards (missing fields it never reached) is noise.
	exhausted bool
	// checked maps the scalars whose form was checked to whether it is
	// plain, so a scalar reached twice (an alias, a value handed on) is
	// reported once.
	checked map[*yaml.Node]bool
}

// Parse reads one YAML document. It rejects oversize files, invalid UTF-8 and
// streams of more than one document. The root is nil when parsing failed; the
// decoder then holds the reason.
func Parse(file string, src []byte) (*Decoder, *yaml.Node) {
	d := &Decoder{File: file, Src: src}
	if len(src) > MaxFileSize {
		d.add(1, 1, false, "file is over %d bytes (1 MiB), the limit for recipes and profiles", MaxFileSize)
		return d, nil
	}
	if !utf8.Valid(src) {
		line, col := firstInvalidUTF8(src)
		d.add(line, col, false, "file is not valid UTF-8")
		return d, nil
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.add(1, 1, false, "file is empty")
			return d, nil
		}
		d.syntax(err)
		return d, nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		d.add(extra.Line, extra.Column, false, "a file holds one YAML document; found another here (remove the '---')")
		return d, nil
	case !errors.Is(err, io.EOF):
		d.syntax(err)
		return d, nil
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		d.add(1, 1, false, "file is empty")
		return d, nil
	}
	return d, doc.Content[0]
}

// Resolve follows aliases, counting every node so alias bombs stop early.
// It returns nil once the bound is passed.
func (d *Decoder) Resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n == nil {
		return nil
	}
	d.nodes++
	if d.nodes == MaxNodes+1 {
		d.Errorf(n, "document expands to more than %d nodes (aliases?); refusing to read further", MaxNodes)
		d.exhausted = true
	}
	if d.nodes > MaxNodes {
		return nil
	}
	d.plain(n)
	return n
}
