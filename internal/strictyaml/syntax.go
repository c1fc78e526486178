package strictyaml

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

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
