package pyjson

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFormatFloat(t *testing.T) {
	t.Parallel()
	// Expected strings are Python's repr() of the same values.
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0.0"},
		{math.Copysign(0, -1), "-0.0"},
		{1, "1.0"},
		{-2.5, "-2.5"},
		{41.5237, "41.5237"},
		{4.816526465608797, "4.816526465608797"},
		{0.30000000000000004, "0.30000000000000004"},
		{0.0001, "0.0001"},
		{0.00001, "1e-05"},
		{1.5e-7, "1.5e-07"},
		{123456789, "123456789.0"},
		{1234567890123456, "1234567890123456.0"},
		{1e16, "1e+16"},
		{1.5e22, "1.5e+22"},
		{1787401815.2837, "1787401815.2837"},
		{math.Inf(1), "Infinity"},
		{math.NaN(), "NaN"},
	}
	for _, tt := range tests {
		if got := FormatFloat(tt.in); got != tt.want {
			t.Errorf("FormatFloat(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMarshal(t *testing.T) {
	t.Parallel()
	obj := NewObject().
		Set("b", 1).
		Set("a", []any{1.0, "é", nil, true}).
		Set("empty", NewObject()).
		Set("list", []string{}).
		Set("m", map[string]int{"z": 1, "y": 2})
	obj.Set("b", 2) // keeps its first position, like a dict
	tests := []struct {
		name string
		in   any
		opts Options
		want string
	}{
		{
			name: "python default separators and ascii escapes",
			in:   obj,
			opts: Options{EnsureASCII: true},
			want: `{"b": 2, "a": [1.0, "\u00e9", null, true], "empty": {}, "list": [], "m": {"y": 2, "z": 1}}`,
		},
		{
			name: "indent keeps unicode",
			in:   NewObject().Set("a", []float64{1, 0.5}).Set("s", "é"),
			opts: Options{Indent: 2},
			want: "{\n  \"a\": [\n    1.0,\n    0.5\n  ],\n  \"s\": \"é\"\n}",
		},
		{
			name: "escapes",
			in:   "q\"\\\n\t\x01</>😀",
			opts: Options{EnsureASCII: true},
			want: `"q\"\\\n\t\u0001</>\ud83d\ude00"`,
		},
		{
			name: "nested int lists",
			in:   [][]int{{1, 2}, {}},
			want: `[[1, 2], []]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Marshal(tt.in, tt.opts)
			if err != nil {
				t.Fatalf("Marshal() error = %v", err)
			}
			if diff := cmp.Diff(string(got), tt.want); diff != "" {
				t.Errorf("Marshal() diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestObjectDelete(t *testing.T) {
	t.Parallel()
	o := NewObject().Set("a", 1).Set("b", 2).Set("c", 3)
	o.Delete("b")
	o.Delete("missing")
	if diff := cmp.Diff(o.Keys(), []string{"a", "c"}); diff != "" {
		t.Errorf("Keys() diff (-got +want):\n%s", diff)
	}
	if _, err := Marshal(map[int]int{1: 1}, Options{}); err == nil {
		t.Error("Marshal(map[int]int) error = nil, want unsupported key error")
	}
}
