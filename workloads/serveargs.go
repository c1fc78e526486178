package workloads

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// word is one argv entry and where it started in the serve_args text.
type word struct {
	text string
	raw  string // as written, for locating it in the file
}

// splitServeArgs splits serve_args into argv once, with shell-like quoting:
// single quotes are literal, double quotes allow \" and \\, a backslash
// escapes the next character. Unlike a shell, a JSON object or array that
// starts a word (or follows the '=' of --flag=) is kept verbatim, because
// recipes write JSON config values unquoted. Text never reaches a shell, so
// shell operators are errors rather than something to interpret.
func splitServeArgs(s string) ([]word, error) {
	// A capacity hint: words are mostly separated by single spaces.
	words := make([]word, 0, strings.Count(s, " ")+1)
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return words, nil
		}
		start := i
		// Most words are plain: take them as they are, without a copy.
		j := i
		for j < len(s) && !isSpace(s[j]) && strings.IndexByte(specialChars, s[j]) < 0 {
			j++
		}
		if j == len(s) || isSpace(s[j]) {
			words = append(words, word{text: s[i:j], raw: s[i:j]})
			i = j
			continue
		}
		var b strings.Builder
		inWord := true
		for inWord && i < len(s) {
			c := s[i]
			switch {
			case isSpace(c):
				inWord = false
			case (c == '{' || c == '[') && jsonMayStart(b.String()):
				end, err := scanJSON(s, i)
				if err != nil {
					return nil, splitFail(s, start, err)
				}
				b.WriteString(s[i:end])
				i = end
			case c == '\'':
				end := strings.IndexByte(s[i+1:], '\'')
				if end < 0 {
					return nil, splitFail(s, start, fmt.Errorf("unterminated ' quote in %q", s[start:]))
				}
				b.WriteString(s[i+1 : i+1+end])
				i += end + 2
			case c == '"':
				i++
				closed := false
				for i < len(s) {
					if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0 {
						b.WriteByte(s[i+1])
						i += 2
						continue
					}
					if s[i] == '"' {
						closed = true
						i++
						break
					}
					b.WriteByte(s[i])
					i++
				}
				if !closed {
					return nil, splitFail(s, start, fmt.Errorf("unterminated \" quote in %q", s[start:]))
				}
			case c == '\\':
				if i+1 >= len(s) {
					return nil, splitFail(s, start, errors.New("serve_args ends with a lone backslash"))
				}
				b.WriteByte(s[i+1])
				i += 2
			case strings.IndexByte(";|&<>`$()", c) >= 0:
				return nil, splitFail(s, start, fmt.Errorf("unquoted %q in %q: serve_args are an argument list, not a shell command; quote the value if it is meant literally", c, strings.TrimSpace(s[start:min(len(s), i+20)])))
			default:
				b.WriteByte(c)
				i++
			}
		}
		words = append(words, word{text: b.String(), raw: s[start:i]})
	}
}

// specialChars are the bytes that make a word go through the quoting rules.
const specialChars = "'\"\\{[;|&<>`$()"

// splitError is a serve_args problem and the word it is in, so the error
// can point at that word in the file rather than at the whole value.
type splitError struct {
	word string
	err  error
}

func (e *splitError) Error() string { return e.err.Error() }
func (e *splitError) Unwrap() error { return e.err }

func splitFail(s string, start int, err error) error {
	word := s[start:]
	if end := strings.IndexAny(word, " \t\r\n"); end >= 0 {
		word = word[:end]
	}
	return &splitError{word: word, err: err}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// jsonMayStart says whether a '{' or '[' at this point begins a JSON value:
// at the start of a word or right after "--flag=".
func jsonMayStart(prefix string) bool {
	return prefix == "" || (strings.HasPrefix(prefix, "-") && strings.HasSuffix(prefix, "=") && strings.Count(prefix, "=") == 1)
}

// scanJSON returns the end of the JSON value starting at s[i], checking it
// parses.
func scanJSON(s string, i int) (int, error) {
	depth, inStr := 0, false
	for j := i; j < len(s); j++ {
		c := s[j]
		if inStr {
			switch c {
			case '\\':
				j++
			case '"':
				inStr = false
			}
			continue
		}
		switch c {
		case '"':
			inStr = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				if !json.Valid([]byte(s[i : j+1])) {
					return 0, fmt.Errorf("%s is not valid JSON", s[i:j+1])
				}
				return j + 1, nil
			}
		}
	}
	return 0, fmt.Errorf("unterminated JSON value %q", s[i:])
}

// normalizeFlag writes a flag as vLLM's argparse matches it: underscores in
// the flag name (not in dotted sub-keys) are dashes.
func normalizeFlag(f string) string {
	if !strings.HasPrefix(f, "--") {
		return f
	}
	name, sub, dotted := strings.Cut(f[2:], ".")
	if !strings.Contains(name, "_") {
		return f
	}
	name = "--" + strings.ReplaceAll(name, "_", "-")
	if dotted {
		return name + "." + sub
	}
	return name
}

// shortFlags are vLLM serve's single-dash aliases (vllm/engine/arg_utils.py
// and the api server's own). -O is not here: vLLM's parser rewrites it to
// --optimization-level itself, see optimizationLevel.
var shortFlags = map[string]string{
	"-tp":  "--tensor-parallel-size",
	"-pp":  "--pipeline-parallel-size",
	"-dp":  "--data-parallel-size",
	"-dcp": "--decode-context-parallel-size",
	"-pcp": "--prefill-context-parallel-size",
	"-dpn": "--data-parallel-rank",
	"-dpr": "--data-parallel-start-rank",
	"-dpl": "--data-parallel-size-local",
	"-dpa": "--data-parallel-address",
	"-dpp": "--data-parallel-rpc-port",
	"-dpb": "--data-parallel-backend",
	"-dph": "--data-parallel-hybrid-lb",
	"-dpe": "--data-parallel-external-lb",
	"-ep":  "--enable-expert-parallel",
	"-n":   "--nnodes",
	"-r":   "--node-rank",
	"-q":   "--quantization",
	"-sc":  "--speculative-config",
	"-cc":  "--compilation-config",
	"-ac":  "--attention-config",
	"-asc": "--api-server-count",
}

// canonicalFlag writes a flag (without any =value) as vLLM resolves it: a
// short alias as its long name, underscores in the name as dashes. A dotted
// sub-key stays: -sc.method is --speculative-config.method.
func canonicalFlag(f string) string {
	if strings.HasPrefix(f, "--") {
		return normalizeFlag(f)
	}
	base, sub, dotted := strings.Cut(f, ".")
	long, ok := shortFlags[base]
	if !ok {
		return f
	}
	if dotted {
		return long + "." + sub
	}
	return long
}

// optimizationLevel reads vLLM's -O forms: -O3, -O=3 and -Odecode carry
// the level; a bare -O takes the next word. vLLM rewrites them all to
// --optimization-level (-O is no longer --compilation-config).
func optimizationLevel(w string) (value string, attached, ok bool) {
	if !strings.HasPrefix(w, "-O") || strings.HasPrefix(w, "--") {
		return "", false, false
	}
	rest := strings.TrimPrefix(w[2:], "=")
	return rest, rest != "", true
}

// ServeFlag finds a serve flag in argv (the recipe's serve args as split at
// load), whatever spelling the recipe used, and returns its value ("" for a
// bare flag): long is the canonical name, such as --tokenizer-mode.
func ServeFlag(argv []string, long string) (value string, found bool) {
	for i := 0; i < len(argv); i++ {
		w := argv[i]
		if !strings.HasPrefix(w, "-") {
			continue
		}
		flag, value, hasValue := strings.Cut(w, "=")
		if canonicalFlag(flag) != long {
			continue
		}
		if !hasValue && i+1 < len(argv) && (!strings.HasPrefix(argv[i+1], "-") || isNumber(argv[i+1])) {
			value = argv[i+1]
		}
		return value, true
	}
	return "", false
}

// Serve flags the runner sets.
var runnerOwnedServeFlags = map[string]string{
	"--port": "the runner picks the port (--port)",
	// True once the runner passes --host 127.0.0.1 (issue 9); until then
	// the server listens on every interface.
	"--host":  "the runner binds the server to loopback",
	"--model": "vllm.model names the model",
	// vLLM's parser replaces --config FILE with the flags the YAML file
	// holds, which could set any of the above unseen.
	"--config": "vLLM reads more flags from the file, which could set the runner's own; list them in serve_args",
}

// abbreviates returns the flags of owned that flag is a proper prefix of.
// vLLM's FlexibleArgumentParser (vllm/utils/argparse_utils.py) is an
// argparse parser that leaves allow_abbrev at its default, on: a unique
// prefix such as --por is read as --port, and several matches are an
// error. Either way such a flag is not the recipe's to give.
func abbreviates(flag string, owned map[string]string) []string {
	if len(flag) < 3 || !strings.HasPrefix(flag, "--") {
		return nil
	}
	var out []string
	for o := range owned {
		if len(o) > len(flag) && strings.HasPrefix(o, flag) {
			out = append(out, o)
		}
	}
	slices.Sort(out)
	return out
}

// isLevel says whether vLLM's parser reads s after a bare -O.
func isLevel(s string) bool { return len(s) == 1 && strings.IndexByte("0123", s[0]) >= 0 }

func isNumber(s string) bool {
	// Most words are flags: rule them out before ParseFloat, whose error
	// allocates.
	t := strings.TrimLeft(s, "+-")
	if len(s)-len(t) > 1 || t == "" || (t[0] != '.' && (t[0] < '0' || t[0] > '9')) {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}
