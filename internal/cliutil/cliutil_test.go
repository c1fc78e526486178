package cliutil

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args     []string
		operands []string
		json     bool
	}{
		{args: nil},
		{args: []string{"--json", "a"}, operands: []string{"a"}, json: true},
		{args: []string{"a", "--json"}, operands: []string{"a"}, json: true},
		{args: []string{"a", "-json", "b"}, operands: []string{"a", "b"}, json: true},
		{args: []string{"--", "--json"}, operands: []string{"--json"}},
		{args: []string{"a", "--", "-b", "--"}, operands: []string{"a", "-b", "--"}},
	}
	for _, tt := range tests {
		fs := NewFlagSet("test", io.Discard)
		asJSON := fs.Bool("json", false, "")
		got, err := Parse(fs, tt.args)
		if err != nil {
			t.Errorf("Parse(%q) error = %v", tt.args, err)
			continue
		}
		if diff := cmp.Diff(tt.operands, got); diff != "" || *asJSON != tt.json {
			t.Errorf("Parse(%q) = %q, json %v; want %q, json %v", tt.args, got, *asJSON, tt.operands, tt.json)
		}
	}

	fs := NewFlagSet("test", io.Discard)
	_, err := Parse(fs, []string{"a", "--bogus"})
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 2 {
		t.Errorf("Parse with an unknown flag: error = %v, want exit code 2", err)
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want int
		msg  string
	}{
		{"nil", nil, 0, ""},
		{"usage", errors.Join(ErrUsage, errors.New("bad")), 2, "cmd: usage\nbad\n"},
		{"silent exit", Exit(3), 3, ""},
		{"exit with message", &ExitError{Code: 4, Err: errors.New("why")}, 4, "cmd: why\n"},
		{"other", errors.New("boom"), 1, "cmd: boom\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var b strings.Builder
			if got := ExitCode(tt.err, "cmd", &b); got != tt.want || b.String() != tt.msg {
				t.Errorf("ExitCode(%v) = %d, printed %q; want %d, %q", tt.err, got, b.String(), tt.want, tt.msg)
			}
		})
	}
}

func TestEnvRecordsBadValues(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"D": "7200", "I": "x", "B": "maybe", "OK": "5s"}
	e := Env{Getenv: func(k string) string { return vars[k] }}
	if got := e.Duration("OK", time.Second); got != 5*time.Second {
		t.Errorf("Duration(OK) = %v, want 5s", got)
	}
	e.Duration("D", time.Minute)
	e.Int("I", 1)
	e.Bool("B")
	err := e.Err()
	if !errors.Is(err, ErrUsage) {
		t.Fatalf("Err() = %v, want a usage error", err)
	}
	for _, name := range []string{"env D", "env I", "env B"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("Err() = %v, does not name %s", err, name)
		}
	}
}
