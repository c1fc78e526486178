package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// object is a JSON object decoded one level deep, remembering key order.
type object struct {
	keys   []string // first-occurrence order, no duplicates
	values map[string]json.RawMessage
}

// decodeObject splits a JSON object into its top-level members. A repeated
// key keeps its first position and its last value, as Python would.
func decodeObject(data []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return object{}, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return object{}, fmt.Errorf("expected a JSON object, got %s", describeToken(tok))
	}
	obj := object{values: map[string]json.RawMessage{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return object{}, err
		}
		key, ok := tok.(string)
		if !ok {
			return object{}, fmt.Errorf("expected an object key, got %s", describeToken(tok))
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return object{}, fmt.Errorf("key %q: %w", key, err)
		}
		if _, dup := obj.values[key]; !dup {
			obj.keys = append(obj.keys, key)
		}
		obj.values[key] = raw
	}
	if _, err := dec.Token(); err != nil {
		return object{}, err
	}
	return obj, nil
}

func describeToken(tok json.Token) string {
	switch tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", tok)
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// lastValue returns the last of a sequence of whitespace-separated JSON
// values; `vllm bench serve --append-result` writes JSON lines.
func lastValue(data []byte) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var last json.RawMessage
	for n := 1; ; n++ {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("value %d: %w", n, err)
		}
		last = v
	}
	if last == nil {
		return nil, errors.New("no JSON value in input")
	}
	return last, nil
}

// sanitizePythonJSON replaces the bare NaN, Infinity and -Infinity tokens
// that Python's json module emits by null, leaving strings untouched.
func sanitizePythonJSON(data []byte) []byte {
	return replacePythonTokens(data, func(string) string { return "null" })
}

// nonFiniteMark starts the string markPythonJSON puts for a bare token; no
// JSON text Python writes has a NUL in a string.
const nonFiniteMark = "\x00"

// markPythonJSON replaces the bare tokens by strings that say which token
// it was ("\u0000NaN"), so that a reader can name what it found.
func markPythonJSON(data []byte) []byte {
	return replacePythonTokens(data, func(tok string) string { return `"\u0000` + tok + `"` })
}

// nonFinite returns the token markPythonJSON replaced in s, if it did.
func nonFinite(s string) (string, bool) {
	return strings.CutPrefix(s, nonFiniteMark)
}

func replacePythonTokens(data []byte, with func(tok string) string) []byte {
	var out []byte // allocated on first replacement only
	inString, escaped := false, false
	last := 0
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			continue
		}
		var n int
		switch {
		case bytes.HasPrefix(data[i:], []byte("NaN")):
			n = len("NaN")
		case bytes.HasPrefix(data[i:], []byte("Infinity")):
			n = len("Infinity")
		case bytes.HasPrefix(data[i:], []byte("-Infinity")):
			n = len("-Infinity")
		default:
			continue
		}
		out = append(out, data[last:i]...)
		out = append(out, with(string(data[i:i+n]))...)
		i += n - 1
		last = i + 1
	}
	if out == nil {
		return data
	}
	return append(out, data[last:]...)
}

// number reports the value of a raw JSON number. Strings, null and numbers
// that do not fit a float64 report false.
func number(raw json.RawMessage) (float64, bool) {
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// integer reports the value of a raw JSON number that holds a whole number,
// also when Python wrote it as a float (200.0).
func integer(raw json.RawMessage) (int, bool) {
	v, ok := number(raw)
	// Beyond 2^53 a float64 no longer holds every whole number.
	if !ok || v < -(1<<53) || v > 1<<53 || v != float64(int(v)) {
		return 0, false
	}
	return int(v), true
}

// kind names the JSON type of a raw value for error messages.
func kind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
