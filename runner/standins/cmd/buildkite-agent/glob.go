package main

import (
	"fmt"
	"regexp"
	"strings"
)

// globRegexp compiles an artifact glob to an anchored regexp, following the
// agent's documented syntax: "*" and "?" stay within a path segment, "**"
// crosses segments ("**/" also matches nothing), "{a,b}" alternates,
// "[abc]" and "[^abc]" (or "[!abc]") are classes, and "\" escapes.
func globRegexp(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	rest, err := convertGlob(&b, pattern, 0)
	if err != nil {
		return nil, err
	}
	if rest != "" {
		return nil, fmt.Errorf("glob %q: unexpected %q", pattern, rest[:1])
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// convertGlob writes the regexp for s until an unmatched "," or "}" inside
// braces (depth > 0) and returns the unconsumed rest.
func convertGlob(b *strings.Builder, s string, depth int) (string, error) {
	for len(s) > 0 {
		c := s[0]
		switch {
		case c == '\\' && len(s) > 1:
			b.WriteString(regexp.QuoteMeta(s[1:2]))
			s = s[2:]
		case strings.HasPrefix(s, "**/"):
			b.WriteString("(?:.*/)?")
			s = s[3:]
		case strings.HasPrefix(s, "**"):
			b.WriteString(".*")
			s = s[2:]
		case c == '*':
			b.WriteString("[^/]*")
			s = s[1:]
		case c == '?':
			b.WriteString("[^/]")
			s = s[1:]
		case c == '[':
			end := strings.IndexByte(s[1:], ']')
			if end < 0 {
				return "", fmt.Errorf("glob: unterminated character class in %q", s)
			}
			class := s[1 : end+1]
			neg := strings.HasPrefix(class, "^") || strings.HasPrefix(class, "!")
			if neg {
				class = class[1:]
			}
			b.WriteString("[")
			if neg {
				b.WriteString("^")
			}
			for _, r := range class {
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
			b.WriteString("]")
			s = s[end+2:]
		case c == '{':
			b.WriteString("(?:")
			s = s[1:]
			for {
				var err error
				if s, err = convertGlob(b, s, depth+1); err != nil {
					return "", err
				}
				if s == "" {
					return "", fmt.Errorf("glob: unterminated brace")
				}
				sep := s[0]
				s = s[1:]
				if sep == '}' {
					break
				}
				b.WriteString("|")
			}
			b.WriteString(")")
		case depth > 0 && (c == ',' || c == '}'):
			return s, nil
		default:
			b.WriteString(regexp.QuoteMeta(s[:1]))
			s = s[1:]
		}
	}
	return s, nil
}

// globRoot is the longest leading directory of pattern free of glob
// syntax: the only place a walk needs to start.
func globRoot(pattern string) string {
	segs := strings.Split(pattern, "/")
	var lit []string
	for _, seg := range segs[:len(segs)-1] {
		if strings.ContainsAny(seg, `*?[{\`) {
			break
		}
		lit = append(lit, seg)
	}
	root := strings.Join(lit, "/")
	if root == "" && strings.HasPrefix(pattern, "/") {
		return "/"
	}
	return root
}
