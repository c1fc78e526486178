package workloads

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// flagArgs is how one tool reads a recipe's args map.
type flagArgs struct {
	// normalize strips the leading dashes the tool's keys may carry.
	normalize func(key string) string
	// owned are the runner's flags, with why; a recipe may not set them.
	owned map[string]string
	// abbreviations refuses unique prefixes of owned flags too.
	abbreviations bool
	// value checks one scalar value; it reports and returns false when bad.
	value func(v *yaml.Node, what, s string) bool
	// arg checks a whole decoded flag; nil accepts it.
	arg func(v *yaml.Node, what string, arg BenchArg) bool
}

// decodeFlagArgs reads an args map into flags: each key becomes --key
// (underscores as dashes), true a bare flag, false nothing, a list the
// flag repeated, anything else one value on one line. Keys the runner
// owns and keys that name the same flag twice are errors.
func (l *loader) decodeFlagArgs(n *yaml.Node, what string, f flagArgs) []BenchArg {
	d := l.d
	var out []BenchArg
	seen := map[string]*yaml.Node{}
	d.Pairs(n, what, func(k, v *yaml.Node) {
		flag := "--" + strings.ReplaceAll(f.normalize(k.Value), "_", "-")
		if !flagRE.MatchString(flag) {
			d.Errorf(k, "%s key %q is not a flag name", what, k.Value)
			return
		}
		if why, owned := f.owned[flag]; owned {
			d.Errorf(k, "%s: %s cannot be set here: %s", what, flag, why)
			return
		}
		if f.abbreviations {
			if full := abbreviates(flag, f.owned); len(full) > 0 {
				d.Errorf(k, "%s: %s abbreviates %s, which the runner sets: vLLM's argparse accepts a unique prefix of a flag as the flag; write flags in full", what, flag, strings.Join(full, " or "))
				return
			}
		}
		if prev, dup := seen[flag]; dup {
			d.Errorf(k, "%s: %q is %s again (first at line %d)", what, k.Value, flag, prev.Line)
			return
		}
		seen[flag] = k
		key := what + "." + k.Value
		arg := BenchArg{Flag: flag}
		scalar := func(v *yaml.Node) (string, bool) {
			s, ok := d.Scalar(v, key)
			if ok && strings.ContainsAny(s, "\n\x00") {
				d.Errorf(v, "%s: values are one line", key)
				return "", false
			}
			if ok && f.value != nil && !f.value(v, key, s) {
				return "", false
			}
			return s, ok
		}
		switch {
		case v.Kind == yaml.SequenceNode:
			d.Items(v, key, func(_ int, item *yaml.Node) {
				if s, ok := scalar(item); ok {
					arg.Values = append(arg.Values, s)
				}
			})
			if len(arg.Values) == 0 {
				return
			}
		case v.Kind == yaml.ScalarNode && v.ShortTag() == "!!bool":
			// YAML 1.2 spells booleans true, True or TRUE (and false alike),
			// as the recipe's own fields read them; false means "do not pass
			// the flag", so keep it out of argv.
			if on, _ := d.Bool(v, key); !on {
				return
			}
		default:
			s, ok := scalar(v)
			if !ok {
				return
			}
			arg.Values = []string{s}
		}
		if f.arg == nil || f.arg(v, key, arg) {
			out = append(out, arg)
		}
	})
	return out
}
