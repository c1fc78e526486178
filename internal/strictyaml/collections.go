package strictyaml

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// Field is one known key of a mapping.
type Field struct {
	Name string
	// Decode receives the key node and the value node, aliases resolved.
	Decode func(key, val *yaml.Node)
}

// Fields decodes a mapping: duplicate keys, unknown keys and merge keys are
// errors, each known key is handed to its decoder in document order. It
// returns false when n is not a mapping. what names the mapping in messages.
func (d *Decoder) Fields(n *yaml.Node, what string, fields []Field) bool {
	return d.Pairs(n, what, func(k, v *yaml.Node) {
		f, ok := findField(fields, k.Value)
		if !ok {
			names := make([]string, len(fields))
			for j, f := range fields {
				names[j] = f.Name
			}
			msg := fmt.Sprintf("unknown field %q in %s", k.Value, what)
			if s := Suggest(k.Value, names); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			} else {
				msg += fmt.Sprintf(" (known: %s)", strings.Join(names, ", "))
			}
			d.Errorf(k, "%s", msg)
			return
		}
		if f.Decode != nil {
			f.Decode(k, v)
		}
	})
}

func findField(fields []Field, name string) (Field, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// keySet finds duplicate keys of one mapping. Nearly every mapping is small,
// so keys are scanned until there are enough to be worth a map: on a large
// catalog a map per mapping is a noticeable share of the loader's garbage.
type keySet struct {
	small [8]*yaml.Node
	n     int
	m     map[string]*yaml.Node
}

// add records k and returns the earlier key of the same value, if any.
func (s *keySet) add(k *yaml.Node) *yaml.Node {
	if s.m == nil {
		for _, p := range s.small[:s.n] {
			if p.Value == k.Value {
				return p
			}
		}
		if s.n < len(s.small) {
			s.small[s.n] = k
			s.n++
			return nil
		}
		s.m = make(map[string]*yaml.Node, 2*len(s.small))
		for _, p := range s.small {
			s.m[p.Value] = p
		}
	}
	if p, ok := s.m[k.Value]; ok {
		return p
	}
	s.m[k.Value] = k
	return nil
}

// Pairs walks a mapping, aliases resolved, rejecting duplicate, merge and
// non-scalar keys. Fields builds on it; open mappings (keys are data, such
// as env) use it directly.
func (d *Decoder) Pairs(n *yaml.Node, what string, each func(key, val *yaml.Node)) bool {
	n = d.collection(n, yaml.MappingNode, what, "a mapping")
	if n == nil {
		return false
	}
	var seen keySet
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.Resolve(n.Content[i])
		if k == nil {
			return false
		}
		if k.Kind != yaml.ScalarNode {
			d.Errorf(k, "%s keys must be plain strings", what)
			continue
		}
		if k.Tag == "!!merge" || k.Value == "<<" {
			d.Errorf(k, "merge keys (<<) are not supported in %s; write the fields out", what)
			continue
		}
		if prev := seen.add(k); prev != nil {
			d.Errorf(k, "duplicate key %q in %s (first at line %d)", k.Value, what, prev.Line)
			continue
		}
		v := d.Resolve(n.Content[i+1])
		if v == nil {
			return false
		}
		each(k, v)
	}
	return true
}

// Items walks a sequence.
func (d *Decoder) Items(n *yaml.Node, what string, each func(i int, item *yaml.Node)) bool {
	n = d.collection(n, yaml.SequenceNode, what, "a list")
	if n == nil {
		return false
	}
	for i, item := range n.Content {
		item = d.Resolve(item)
		if item == nil {
			return false
		}
		each(i, item)
	}
	return true
}

// collection is n, aliases resolved, when it is of kind; else nil: Resolve
// gave up, or n is of another kind and an error says what must be shape.
func (d *Decoder) collection(n *yaml.Node, kind yaml.Kind, what, shape string) *yaml.Node {
	n = d.Resolve(n)
	if n == nil {
		return nil
	}
	if n.Kind != kind {
		d.Errorf(n, "%s must be %s, got %s", what, shape, Describe(n))
		return nil
	}
	return n
}
