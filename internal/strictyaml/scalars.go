package strictyaml

import (
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

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
