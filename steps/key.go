package steps

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// MaxKeyLen is the longest step key Buildkite accepts.
const MaxKeyLen = 100

var (
	keyPattern  = regexp.MustCompile(`^[a-zA-Z0-9_\-:${}.,]+$`)
	uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// Key builds a valid step key from arbitrary text. Each part keeps its
// letters, digits, "_", "-" and "."; every run of other characters becomes
// one "-", and the ends are trimmed of "-". Non-empty parts are joined with
// ":", which therefore never comes from inside a part. "$", "{" and "}" are
// never kept, so a key is not interpolated at upload.
//
// A key longer than MaxKeyLen is cut and ends in "-" and 8 hex digits of a
// hash of all the parts, so that long keys stay distinct and stable. A key
// that would look like a UUID, which Buildkite rejects, gets a "step-"
// prefix. Key returns "" when no part has a usable character.
func Key(parts ...string) string {
	clean := make([]string, 0, len(parts))
	for _, p := range parts {
		if c := sanitizeKeyPart(p); c != "" {
			clean = append(clean, c)
		}
	}
	key := strings.Join(clean, ":")
	if len(key) > MaxKeyLen {
		sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
		suffix := "-" + hex.EncodeToString(sum[:4])
		key = strings.TrimRight(key[:MaxKeyLen-len(suffix)], "-:.") + suffix
	}
	if uuidPattern.MatchString(key) {
		key = "step-" + key
	}
	return key
}

func sanitizeKeyPart(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	replaced := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
			replaced = false
		case !replaced:
			b.WriteByte('-')
			replaced = true
		}
	}
	return strings.Trim(b.String(), "-")
}
