// Package strictyaml decodes YAML through yaml.v3 nodes so that every problem
// carries the file, line and column it came from, and all problems of a file
// are collected in one pass instead of stopping at the first.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
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

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

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

func (d *Decoder) syntax(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	line, col := 1, 1
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		// yaml.v3 numbers parser errors (as opposed to scanner errors)
		// from 0, at the line where the unfinished construct began: for
		// a mis-indented key that is the enclosing mapping's first line,
		// possibly far above. The line that breaks it is the first line
		// whose prefix of the file fails the same way.
		if strings.HasPrefix(msg, "did not find expected") {
			line++
			if l, ok := firstFailingLine(d.Src, line, err.Error()); ok {
				line = l
				// A key or item out of place is the line's first token.
				if strings.HasSuffix(msg, "key") || strings.HasSuffix(msg, "indicator") {
					col = indentCol(d.Src, l)
				}
			}
		}
	}
	d.add(line, col, false, "YAML syntax: %s", msg)
}

// firstFailingLine returns the smallest line n >= from such that the
// file's first n lines fail to parse with error want. Parsing a prefix
// that fails implies every longer prefix up to the whole file fails (the
// broken construct is still there), so a binary search finds it.
func firstFailingLine(src []byte, from int, want string) (int, bool) {
	starts := []int{0}
	for i, b := range src {
		if b == '\n' && i+1 < len(src) {
			starts = append(starts, i+1)
		}
	}
	prefix := func(n int) []byte {
		if n >= len(starts) {
			return src
		}
		return src[:starts[n]]
	}
	if from < 1 {
		from = 1
	}
	lo, hi := from, len(starts)
	if lo > hi || parseErr(prefix(hi)) != want {
		return 0, false
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if parseErr(prefix(mid)) == want {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, true
}

// parseErr is the error text of parsing every document of src, or "".
func parseErr(src []byte) string {
	dec := yaml.NewDecoder(bytes.NewReader(src))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return ""
		}
		if err != nil {
			return err.Error()
		}
	}
}

// indentCol is the column of the first non-blank character of line n.
func indentCol(src []byte, n int) int {
	lines := bytes.SplitN(src, []byte("\n"), n+1)
	if n < 1 || n > len(lines) {
		return 1
	}
	return len(lines[n-1]) - len(bytes.TrimLeft(lines[n-1], " \t")) + 1
}

func firstInvalidUTF8(src []byte) (line, col int) {
	line, col = 1, 1
	for len(src) > 0 {
		r, size := utf8.DecodeRune(src)
		if r == utf8.RuneError && size <= 1 {
			return line, col
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		src = src[size:]
	}
	return line, col
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

var (
	// plainIntRE is an integer every YAML reader reads alike: decimal
	// digits without a leading zero, '+' or '_'.
	plainIntRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)
	// plainFloatRE is a number in decimal notation, without '+' or '_'.
	plainFloatRE = regexp.MustCompile(`^-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$`)
)

// plain reports a scalar written in a form YAML readers disagree on: an
// explicit tag (!!bool yes is true in YAML 1.1 and false in this reader),
// an integer with a leading zero (010 is 8 in YAML 1.1 and 10 in 1.2), hex,
// octal, binary, '+' or '_'. It returns false for such a scalar, reporting
// it the first time.
func (d *Decoder) plain(n *yaml.Node) bool {
	if n.Kind != yaml.ScalarNode {
		return true
	}
	if ok, seen := d.checked[n]; seen {
		return ok
	}
	if d.checked == nil {
		d.checked = map[*yaml.Node]bool{}
	}
	ok := false
	switch tag := n.ShortTag(); {
	case n.Style&yaml.TaggedStyle != 0:
		d.Errorf(n, "explicit YAML tag %s on %q: tags are not accepted; write true or false, numbers in decimal, and quote text", n.Tag, n.Value)
	case tag == "!!int" && !plainIntRE.MatchString(n.Value):
		d.Errorf(n, "integer %s is not in plain decimal form: YAML readers disagree on leading zeros, '+', '_', 0x, 0o and 0b (010 is 8 to some and 10 to others); write decimal digits, or quote it to mean text", n.Value)
	case tag == "!!float" && !plainFloatRE.MatchString(n.Value) && !isInfNaN(n.Value):
		d.Errorf(n, "number %s is not in plain decimal form: YAML readers disagree on '+' and '_'; write decimal digits, or quote it to mean text", n.Value)
	default:
		ok = true
	}
	d.checked[n] = ok
	return ok
}

// isInfNaN leaves .inf and .nan to Float, which says they are not finite.
func isInfNaN(s string) bool {
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case ".inf", ".nan":
		return true
	}
	return false
}

// Field is one known key of a mapping.
type Field struct {
	Name string
	// Decode receives the key node and the value node, aliases resolved.
	Decode func(key, val *yaml.Node)
}

// Fields decodes a mapping: duplicate keys, unknown keys and merge keys are
// errors, each known key is handed to its decoder in document order. It
// returns false when n is not a mapping. what names the mapping in messages.
func (d *Decoder) Fields(n *yaml.Node, what string, fields []Field) bool {
	return d.Pairs(n, what, func(k, v *yaml.Node) {
		f, ok := findField(fields, k.Value)
		if !ok {
			names := make([]string, len(fields))
			for j, f := range fields {
				names[j] = f.Name
			}
			msg := fmt.Sprintf("unknown field %q in %s", k.Value, what)
			if s := Suggest(k.Value, names); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			} else {
				msg += fmt.Sprintf(" (known: %s)", strings.Join(names, ", "))
			}
			d.Errorf(k, "%s", msg)
			return
		}
		if f.Decode != nil {
			f.Decode(k, v)
		}
	})
}

func findField(fields []Field, name string) (Field, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// keySet finds duplicate keys of one mapping. Nearly every mapping is small,
// so keys are scanned until there are enough to be worth a map: on a large
// catalog a map per mapping is a noticeable share of the loader's garbage.
type keySet struct {
	small [8]*yaml.Node
	n     int
	m     map[string]*yaml.Node
}

// add records k and returns the earlier key of the same value, if any.
func (s *keySet) add(k *yaml.Node) *yaml.Node {
	if s.m == nil {
		for _, p := range s.small[:s.n] {
			if p.Value == k.Value {
				return p
			}
		}
		if s.n < len(s.small) {
			s.small[s.n] = k
			s.n++
			return nil
		}
		s.m = make(map[string]*yaml.Node, 2*len(s.small))
		for _, p := range s.small {
			s.m[p.Value] = p
		}
	}
	if p, ok := s.m[k.Value]; ok {
		return p
	}
	s.m[k.Value] = k
	return nil
}

// Pairs walks a mapping, aliases resolved, rejecting duplicate, merge and
// non-scalar keys. Fields builds on it; open mappings (keys are data, such
// as env) use it directly.
func (d *Decoder) Pairs(n *yaml.Node, what string, each func(key, val *yaml.Node)) bool {
	n = d.collection(n, yaml.MappingNode, what, "a mapping")
	if n == nil {
		return false
	}
	var seen keySet
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.Resolve(n.Content[i])
		if k == nil {
			return false
		}
		if k.Kind != yaml.ScalarNode {
			d.Errorf(k, "%s keys must be plain strings", what)
			continue
		}
		if k.Tag == "!!merge" || k.Value == "<<" {
			d.Errorf(k, "merge keys (<<) are not supported in %s; write the fields out", what)
			continue
		}
		if prev := seen.add(k); prev != nil {
			d.Errorf(k, "duplicate key %q in %s (first at line %d)", k.Value, what, prev.Line)
			continue
		}
		v := d.Resolve(n.Content[i+1])
		if v == nil {
			return false
		}
		each(k, v)
	}
	return true
}

// Items walks a sequence.
func (d *Decoder) Items(n *yaml.Node, what string, each func(i int, item *yaml.Node)) bool {
	n = d.collection(n, yaml.SequenceNode, what, "a list")
	if n == nil {
		return false
	}
	for i, item := range n.Content {
		item = d.Resolve(item)
		if item == nil {
			return false
		}
		each(i, item)
	}
	return true
}

// collection is n, aliases resolved, when it is of kind; else nil: Resolve
// gave up, or n is of another kind and an error says what must be shape.
func (d *Decoder) collection(n *yaml.Node, kind yaml.Kind, what, shape string) *yaml.Node {
	n = d.Resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != kind {
		d.Errorf(n, "%s must be %s, got %s", what, shape, Describe(n))
		return nil
	}
	return n
}

// String decodes a string scalar. Numbers and booleans are not strings here:
// a recipe that means text should say so.
func (d *Decoder) String(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.Errorf(n, "%s must be a string, got %s", what, Describe(n))
		return "", false
	}
	return n.Value, true
}

// Scalar returns the text of any scalar (string, number, boolean), for
// values that end up as text anyway, such as environment variables.
func (d *Decoder) Scalar(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.Errorf(n, "%s must be a string, number or boolean, got %s", what, Describe(n))
		return "", false
	}
	return n.Value, true
}

// Int decodes an integer scalar within [min, max].
func (d *Decoder) Int(n *yaml.Node, what string, min, max int) (int, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		d.Errorf(n, "%s must be an integer, got %s", what, Describe(n))
		return 0, false
	}
	if !d.plain(n) {
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		d.Errorf(n, "%s: %q is not an integer this reader accepts", what, n.Value)
		return 0, false
	}
	if v < int64(min) || v > int64(max) {
		d.Errorf(n, "%s must be between %d and %d, got %d", what, min, max, v)
		return 0, false
	}
	return int(v), true
}

// Float decodes a number (integer or float) within [min, max].
func (d *Decoder) Float(n *yaml.Node, what string, min, max float64) (float64, bool) {
	tag := n.ShortTag()
	if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") {
		d.Errorf(n, "%s must be a number, got %s", what, Describe(n))
		return 0, false
	}
	if !d.plain(n) {
		return 0, false
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || v != v {
		d.Errorf(n, "%s: %q is not a finite number", what, n.Value)
		return 0, false
	}
	if v < min || v > max {
		d.Errorf(n, "%s must be between %g and %g, got %g", what, min, max, v)
		return 0, false
	}
	return v, true
}

// Bool decodes true or false. "yes", "on" and quoted strings are errors: in
// YAML 1.1 they were booleans and readers disagree about them.
func (d *Decoder) Bool(n *yaml.Node, what string) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		d.Errorf(n, "%s must be true or false, got %s", what, Describe(n))
		return false, false
	}
	if !d.plain(n) {
		return false, false
	}
	return n.Value == "true" || n.Value == "True" || n.Value == "TRUE", true
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

// Suggest returns the candidate closest to s, if it is close enough to be a
// likely typo.
func Suggest(s string, candidates []string) string {
	best, bestDist := "", 1<<30
	for _, c := range candidates {
		if dist := levenshtein(strings.ToLower(s), strings.ToLower(c)); dist < bestDist {
			best, bestDist = c, dist
		}
	}
	limit := 2
	if len(s) > 8 {
		limit = 3
	}
	if bestDist <= limit {
		return best
	}
	return ""
}

// Closest returns up to n candidates ordered by edit distance to s, for
// "did you mean" lists.
func Closest(s string, candidates []string, n int) []string {
	type scored struct {
		c string
		d int
	}
	var all []scored
	for _, c := range candidates {
		d := levenshtein(strings.ToLower(s), strings.ToLower(c))
		if strings.Contains(strings.ToLower(c), strings.ToLower(s)) {
			d = 0
		}
		if d <= len(s)/2+2 {
			all = append(all, scored{c, d})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].d != all[j].d {
			return all[i].d < all[j].d
		}
		return all[i].c < all[j].c
	})
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].c)
	}
	return out
}

// Distance is the edit distance between a and b, in runes.
func Distance(a, b string) int { return levenshtein(a, b) }

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
