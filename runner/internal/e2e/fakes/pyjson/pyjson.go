// Package pyjson writes JSON the way Python's json module does, so files from
// the stand-in tools are byte-for-byte like the ones the real tools write:
// objects keep insertion order, floats keep their ".0", the default
// separators are ", " and ": ", and non-ASCII is escaped only on request.
package pyjson

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Object is a JSON object that remembers the order keys were first set,
// like a Python dict.
type Object struct {
	keys []string
	vals map[string]any
}

// NewObject returns an empty Object.
func NewObject() *Object { return &Object{vals: map[string]any{}} }

// Set stores v under k. A key that already exists keeps its position.
func (o *Object) Set(k string, v any) *Object {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
	return o
}

// Get returns the value stored under k.
func (o *Object) Get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// Delete removes k if present.
func (o *Object) Delete(k string) {
	if _, ok := o.vals[k]; !ok {
		return
	}
	delete(o.vals, k)
	o.keys = slices.DeleteFunc(o.keys, func(s string) bool { return s == k })
}

// Keys returns the keys in insertion order.
func (o *Object) Keys() []string { return slices.Clone(o.keys) }

// Options selects the json.dumps arguments to imitate.
type Options struct {
	// Indent > 0 pretty-prints like json.dumps(indent=Indent).
	Indent int
	// EnsureASCII escapes every non-ASCII character, like Python's default.
	EnsureASCII bool
}

// Marshal encodes v. Supported values: nil, bool, strings, integers, floats
// (always written as Python floats), *Object, map[string]T (sorted keys), and
// slices or arrays of supported values.
func Marshal(v any, opts Options) ([]byte, error) {
	e := encoder{opts: opts}
	if err := e.value(reflect.ValueOf(v), 0); err != nil {
		return nil, err
	}
	return e.buf.Bytes(), nil
}

type encoder struct {
	buf  bytes.Buffer
	opts Options
}

var objectType = reflect.TypeFor[*Object]()

func (e *encoder) value(v reflect.Value, depth int) error {
	if !v.IsValid() {
		e.buf.WriteString("null")
		return nil
	}
	if v.Type() == objectType {
		if v.IsNil() {
			e.buf.WriteString("null")
			return nil
		}
		o := v.Interface().(*Object)
		return e.object(o.keys, func(k string) reflect.Value { return reflect.ValueOf(o.vals[k]) }, depth)
	}
	switch v.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			e.buf.WriteString("null")
			return nil
		}
		return e.value(v.Elem(), depth)
	case reflect.Bool:
		if v.Bool() {
			e.buf.WriteString("true")
		} else {
			e.buf.WriteString("false")
		}
	case reflect.String:
		e.str(v.String())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf.WriteString(strconv.FormatInt(v.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		e.buf.WriteString(strconv.FormatUint(v.Uint(), 10))
	case reflect.Float32, reflect.Float64:
		e.buf.WriteString(FormatFloat(v.Float()))
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.IsNil() {
			e.buf.WriteString("[]")
			return nil
		}
		return e.array(v, depth)
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return fmt.Errorf("pyjson: unsupported map key type %s", v.Type().Key())
		}
		keys := make([]string, 0, v.Len())
		for _, k := range v.MapKeys() {
			keys = append(keys, k.String())
		}
		slices.Sort(keys)
		return e.object(keys, func(k string) reflect.Value {
			return v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key()))
		}, depth)
	default:
		return fmt.Errorf("pyjson: unsupported type %s", v.Type())
	}
	return nil
}

func (e *encoder) array(v reflect.Value, depth int) error {
	if v.Len() == 0 {
		e.buf.WriteString("[]")
		return nil
	}
	e.buf.WriteByte('[')
	for i := range v.Len() {
		if i > 0 {
			e.separator()
		}
		e.newline(depth + 1)
		if err := e.value(v.Index(i), depth+1); err != nil {
			return err
		}
	}
	e.newline(depth)
	e.buf.WriteByte(']')
	return nil
}

func (e *encoder) object(keys []string, get func(string) reflect.Value, depth int) error {
	if len(keys) == 0 {
		e.buf.WriteString("{}")
		return nil
	}
	e.buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			e.separator()
		}
		e.newline(depth + 1)
		e.str(k)
		e.buf.WriteString(": ")
		if err := e.value(get(k), depth+1); err != nil {
			return err
		}
	}
	e.newline(depth)
	e.buf.WriteByte('}')
	return nil
}

// separator mirrors Python: ", " without indent, "," with it.
func (e *encoder) separator() {
	if e.opts.Indent > 0 {
		e.buf.WriteByte(',')
	} else {
		e.buf.WriteString(", ")
	}
}

func (e *encoder) newline(depth int) {
	if e.opts.Indent <= 0 {
		return
	}
	e.buf.WriteByte('\n')
	e.buf.WriteString(strings.Repeat(" ", depth*e.opts.Indent))
}

func (e *encoder) str(s string) {
	e.buf.WriteByte('"')
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		switch r {
		case '"':
			e.buf.WriteString(`\"`)
		case '\\':
			e.buf.WriteString(`\\`)
		case '\n':
			e.buf.WriteString(`\n`)
		case '\r':
			e.buf.WriteString(`\r`)
		case '\t':
			e.buf.WriteString(`\t`)
		case '\b':
			e.buf.WriteString(`\b`)
		case '\f':
			e.buf.WriteString(`\f`)
		default:
			switch {
			case r < 0x20, e.opts.EnsureASCII && r == 0x7f:
				fmt.Fprintf(&e.buf, `\u%04x`, r)
			case e.opts.EnsureASCII && r > 0x7f:
				if r > 0xffff {
					r -= 0x10000
					fmt.Fprintf(&e.buf, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
				} else {
					fmt.Fprintf(&e.buf, `\u%04x`, r)
				}
			default:
				e.buf.WriteRune(r)
			}
		}
	}
	e.buf.WriteByte('"')
}

// FormatFloat formats f like Python's repr(float): the shortest digits that
// round-trip, a ".0" on integral values, and exponent notation outside
// 1e-4 <= |f| < 1e16.
func FormatFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	exp := strconv.FormatFloat(f, 'e', -1, 64)
	sign := ""
	if exp[0] == '-' {
		sign, exp = "-", exp[1:]
	}
	mant, e10, _ := strings.Cut(exp, "e")
	n, _ := strconv.Atoi(e10)
	decpt := n + 1 // digits are 0.DDDD × 10^decpt
	if decpt <= -4 || decpt > 16 {
		return sign + exp
	}
	digits := strings.Replace(mant, ".", "", 1)
	switch {
	case decpt <= 0:
		return sign + "0." + strings.Repeat("0", -decpt) + digits
	case decpt >= len(digits):
		return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
	default:
		return sign + digits[:decpt] + "." + digits[decpt:]
	}
}
