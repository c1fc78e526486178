package steps

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// ErrUnescapable reports a string that upload-time interpolation cannot
// leave unchanged however it is escaped.
var ErrUnescapable = errors.New(`odd run of backslashes before "$" cannot survive interpolation`)

// EscapeInterpolation returns s with every "$" doubled, so that the
// interpolation "buildkite-agent pipeline upload" applies to every string of
// a pipeline turns it back into s: "$$" becomes "$", and "$VAR", "${VAR}" and
// "${VAR:-x}" are no longer expanded with the uploading job's environment but
// reach the job's shell as written.
//
// One case cannot be escaped: an odd number of backslashes right before a
// "$" (as in `echo \$HOME`), because the agent reads `\$` as an escaped "$"
// and drops the backslash. Write such text another way, e.g. '$HOME' in
// single quotes. MarshalForUpload reports it as ErrUnescapable.
func EscapeInterpolation(s string) string {
	return strings.ReplaceAll(s, "$", "$$")
}

// checkEscapable returns ErrUnescapable when s has an odd run of
// backslashes directly before a "$".
func checkEscapable(s string) error {
	run := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			run++
			continue
		case '$':
			if run%2 == 1 {
				return fmt.Errorf("%w: %q at byte %d", ErrUnescapable, s, i-1)
			}
		}
		run = 0
	}
	return nil
}

// escapeTree escapes every string of a decoded JSON document, object keys
// included, since the agent interpolates those too.
func escapeTree(v any, path string) (any, error) {
	switch v := v.(type) {
	case string:
		if err := checkEscapable(v); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return EscapeInterpolation(v), nil
	case []any:
		out := make([]any, len(v))
		var errs []error
		for i, e := range v {
			var err error
			out[i], err = escapeTree(e, fmt.Sprintf("%s[%d]", path, i))
			errs = append(errs, err)
		}
		return out, errors.Join(errs...)
	case map[string]any:
		out := make(map[string]any, len(v))
		var errs []error
		// Sorted so that errors come in document order.
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := path + "." + k
			if err := checkEscapable(k); err != nil {
				errs = append(errs, fmt.Errorf("%s (key): %w", p, err))
				continue
			}
			e, err := escapeTree(v[k], p)
			errs = append(errs, err)
			out[EscapeInterpolation(k)] = e
		}
		return out, errors.Join(errs...)
	}
	return v, nil
}

// CheckInterpolation returns an ErrUnescapable error when s cannot pass
// through upload-time interpolation unchanged, however it is escaped.
func CheckInterpolation(s string) error { return checkEscapable(s) }

// CheckStep reports every string of step s, attributes and keys alike,
// that MarshalForUpload could not carry, so that a caller can replace one
// step instead of losing the whole pipeline.
func CheckStep(s Step) error {
	v := stepValue(s)
	if v == nil {
		return errors.New("nil step")
	}
	b, err := encode(v)
	if err != nil {
		return err
	}
	doc, err := decodeJSON(b)
	if err != nil {
		return err
	}
	_, err = escapeTree(doc, "step")
	return err
}

// TextValue returns text in the form PrintTextCommand prints back exactly:
// every backslash doubled. No odd run of backslashes is then left before a
// "$", so any text, whatever a recipe holds, survives interpolation.
//
// Text longer than MaxText is cut at a line break with a note saying how
// much was left out: the agent refuses to start a job whose environment
// is too large (one variable over 128 KiB keeps the step from starting).
func TextValue(text string) string { return strings.ReplaceAll(CapText(text), `\`, `\\`) }

// MaxText bounds the text TextValue carries; doubled backslashes at most
// double it.
const MaxText = 16 << 10

// CapText returns text, or when it is longer than MaxText its first
// lines that fit and a last line saying how many bytes were cut.
func CapText(text string) string {
	if len(text) <= MaxText {
		return text
	}
	// The note's number has at most as many digits as len(text).
	note := fmt.Sprintf("\n… %d more bytes cut: the text is longer than a step's environment should carry; the full text is in the job that made it", len(text))
	cut := text[:MaxText-len(note)]
	// Not in the middle of a character.
	for i := 0; i < utf8.UTFMax && len(cut) > 0; i++ {
		if r, size := utf8.DecodeLastRuneInString(cut); r != utf8.RuneError || size > 1 {
			break
		}
		cut = cut[:len(cut)-1]
	}
	if i := strings.LastIndexByte(cut, '\n'); i > 0 {
		cut = cut[:i]
	}
	return cut + fmt.Sprintf("\n… %d more bytes cut: the text is longer than a step's environment should carry; the full text is in the job that made it", len(text)-len(cut))
}

// PrintTextCommand is the shell command that prints the env var name, set
// to a TextValue, as the original text. printf's %b undoes the doubled
// backslashes and nothing else: the shell expands only the variable.
func PrintTextCommand(name string) string { return `printf '%b\n' "$` + name + `"` }

// LabelText returns s for display in a label, which cannot hold an odd run
// of backslashes before a "$": such a run gets one more backslash. Labels
// are read by people, so one extra backslash beats losing the pipeline.
func LabelText(s string) string {
	if checkEscapable(s) == nil {
		return s
	}
	var b strings.Builder
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '$' && run%2 == 1 {
			b.WriteByte('\\')
		}
		if c == '\\' {
			run++
		} else {
			run = 0
		}
		b.WriteByte(c)
	}
	return b.String()
}
