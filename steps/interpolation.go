package steps

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
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
