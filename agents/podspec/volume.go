package podspec

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// volumeSourceJSON is the shape of k8s.io/api/core/v1.VolumeSource: every
// source, its fields and their types, written by TestVolumeSourceSchema
// from k8s.io/api itself (go test -update), so it changes only with that
// module's version in go.mod.
//
//go:embed volumesource.json
var volumeSourceJSON []byte

// shape is one node of volumesource.json.
type shape struct {
	// Type is object, array, map, string, boolean, int32, int64, number,
	// quantity (a resource.Quantity: its text or a number), time (RFC 3339)
	// or any.
	Type string `json:"type"`
	// Fields of an object, by JSON name.
	Fields map[string]*shape `json:"fields,omitempty"`
	// Elem is the element of an array or the value of a map.
	Elem *shape `json:"elem,omitempty"`
}

var volumeSourceShape = sync.OnceValues(func() (*shape, error) {
	var s shape
	if err := json.Unmarshal(volumeSourceJSON, &s); err != nil {
		return nil, fmt.Errorf("volumesource.json: %w", err)
	}
	return &s, nil
})

// volumeSource checks a volume source as Kubernetes' API server would read
// it (field names match exactly), except that an unknown field is an error
// rather than dropped: a typo'd claim name field must not turn into an
// emptyDir. It must hold exactly one source. It returns the source as
// written into the pod, its keys sorted.
func volumeSource(raw json.RawMessage) (json.RawMessage, error) {
	want, err := volumeSourceShape()
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not a k8s volume source: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("not a k8s volume source: more after the JSON value in %s", raw)
	}
	if err := check(v, want, ""); err != nil {
		return nil, fmt.Errorf("not a k8s volume source: %w", err)
	}
	keys := v.(map[string]any)
	if len(keys) != 1 {
		return nil, fmt.Errorf("a volume source holds exactly one source, got %s", raw)
	}
	for k, e := range keys {
		if e == nil {
			return nil, fmt.Errorf("volume source %s is null", k)
		}
	}
	return json.Marshal(v)
}

// quantityRE is resource.Quantity's text: a decimal number with an
// optional binary (Ki), decimal (k, m) or exponent (e3) suffix.
var quantityRE = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[KMGTPE]i|[numkMGTPE])?$`)

// check reports the first place v does not fit s; at names it
// (persistentVolumeClaim.claimName). null fits any field, as it does when
// Kubernetes decodes it.
func check(v any, s *shape, at string) error {
	if v == nil {
		return nil
	}
	switch s.Type {
	case "object":
		return checkObject(v, s, at)
	case "map", "array":
		return checkElems(v, s, at)
	}
	return checkScalar(v, s, at)
}

// wrongType is the error of a value of the wrong JSON kind.
func wrongType(v any, s *shape, at string) error {
	return fmt.Errorf("json: cannot use %s as %s for field %q", kindOf(v), s.Type, strings.TrimPrefix(at, "."))
}

// checkObject checks an object's fields in name order; a field s lacks
// is unknown.
func checkObject(v any, s *shape, at string) error {
	m, ok := v.(map[string]any)
	if !ok {
		return wrongType(v, s, at)
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		f, ok := s.Fields[k]
		if !ok {
			return fmt.Errorf("json: unknown field %q", k)
		}
		if err := check(m[k], f, at+"."+k); err != nil {
			return err
		}
	}
	return nil
}

// checkElems checks every value of a map or element of an array.
func checkElems(v any, s *shape, at string) error {
	switch c := v.(type) {
	case map[string]any:
		if s.Type != "map" {
			break
		}
		for k, e := range c {
			if err := check(e, s.Elem, at+"."+k); err != nil {
				return err
			}
		}
		return nil
	case []any:
		if s.Type != "array" {
			break
		}
		for i, e := range c {
			if err := check(e, s.Elem, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		return nil
	}
	return wrongType(v, s, at)
}

// checkScalar checks a string, boolean, number, quantity or time.
func checkScalar(v any, s *shape, at string) error {
	field := strings.TrimPrefix(at, ".")
	switch s.Type {
	case "string":
		if _, ok := v.(string); !ok {
			return wrongType(v, s, at)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return wrongType(v, s, at)
		}
	case "int32", "int64":
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(v, s, at)
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || (s.Type == "int32" && (i < math.MinInt32 || i > math.MaxInt32)) {
			return fmt.Errorf("json: %s is not an %s for field %q", n, s.Type, field)
		}
	case "number":
		if _, ok := v.(json.Number); !ok {
			return wrongType(v, s, at)
		}
	case "quantity":
		switch q := v.(type) {
		case json.Number:
		case string:
			if !quantityRE.MatchString(strings.TrimSpace(q)) {
				return fmt.Errorf("field %q: %q is not a quantity (such as 10Gi)", field, q)
			}
		default:
			return wrongType(v, s, at)
		}
	case "time":
		t, ok := v.(string)
		if !ok {
			return wrongType(v, s, at)
		}
		if _, err := time.Parse(time.RFC3339, t); err != nil {
			return fmt.Errorf("field %q: %w", field, err)
		}
	case "any":
	default:
		return errors.New("volumesource.json: unknown type " + s.Type)
	}
	return nil
}

func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}
