package argparse

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func newParser() *Parser {
	p := New("vllm bench serve")
	p.Add(Value, "--num-prompts")
	p.Add(Value, "--num-warmups")
	p.Add(Bool, "--ignore-eos")
	p.Add(List, "--metadata")
	p.Add(ListPlus, "--goodput")
	p.Add(Optional, "--apply-chat-template")
	p.Add(Value, "--model", "-m")
	p.Add(Value, "--request-rate")
	return p
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    map[string][]string
		wantErr string
	}{
		{
			name: "values, bools, lists",
			args: []string{"--num-prompts", "8", "--ignore-eos", "--metadata", "a=1", "b=2", "-m", "x", "--request-rate=inf"},
			want: map[string][]string{"--num-prompts": {"8"}, "--ignore-eos": {}, "--metadata": {"a=1", "b=2"}, "--model": {"x"}, "--request-rate": {"inf"}},
		},
		{
			name: "underscores, abbreviation, negative value, optional",
			args: []string{"--num_prompts", "-1", "--goodput", "ttft:5", "--apply-chat", "--num-w", "3"},
			want: map[string][]string{"--num-prompts": {"-1"}, "--goodput": {"ttft:5"}, "--apply-chat-template": {}, "--num-warmups": {"3"}},
		},
		{
			name:    "unknown options and values are collected",
			args:    []string{"--ignore-eos", "--bogus", "1", "--other=2"},
			wantErr: "unrecognized arguments: --bogus 1 --other=2",
		},
		{name: "ambiguous", args: []string{"--num", "1"}, wantErr: "ambiguous option: --num could match --num-prompts, --num-warmups"},
		{name: "missing value", args: []string{"--model", "--ignore-eos"}, wantErr: "argument --model: expected one argument"},
		{name: "empty nargs plus", args: []string{"--goodput"}, wantErr: "argument --goodput: expected at least one argument"},
		{name: "bool with value", args: []string{"--ignore-eos=1"}, wantErr: "argument --ignore-eos: ignored explicit argument '1'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := newParser().Parse(tt.args)
			if tt.wantErr != "" {
				var perr *Error
				if !errors.As(err, &perr) || perr.Msg != tt.wantErr {
					t.Fatalf("Parse(%q) error = %v, want %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q) error = %v", tt.args, err)
			}
			if diff := cmp.Diff(got.values, tt.want); diff != "" {
				t.Errorf("Parse(%q) diff (-got +want):\n%s", tt.args, diff)
			}
		})
	}
}

func TestTypedGetters(t *testing.T) {
	t.Parallel()
	r, err := newParser().Parse([]string{"--num-prompts", "x", "--request-rate", "inf", "--model", "b"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Int("--num-prompts", 0); err == nil || err.Error() != "argument --num-prompts: invalid int value: 'x'" {
		t.Errorf("Int() error = %v", err)
	}
	if f, err := r.Float("--request-rate", 1); err != nil || f < 1e308 {
		t.Errorf("Float(inf) = %v, %v", f, err)
	}
	if n, err := r.Int("--num-warmups", 7); err != nil || n != 7 {
		t.Errorf("Int(absent) = %v, %v; want default 7", n, err)
	}
	if _, err := r.Choice("--model", "a", "a", "c"); err == nil || err.Error() != "argument --model: invalid choice: 'b' (choose from 'a', 'c')" {
		t.Errorf("Choice() error = %v", err)
	}
	var buf bytes.Buffer
	(&Error{Prog: "p", Msg: "m"}).Print(&buf)
	if got, want := buf.String(), "usage: p [options]\np: error: m\n"; got != want {
		t.Errorf("Print() = %q, want %q", got, want)
	}
}
