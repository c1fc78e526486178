package buildlog

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMarkers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		write func(w *bytes.Buffer)
		want  string
	}{
		{name: "section", write: func(w *bytes.Buffer) { Section(w, ":vllm: Serve org/model") }, want: "--- :vllm: Serve org/model\n"},
		{name: "expand", write: func(w *bytes.Buffer) { Expand(w, "Results") }, want: "+++ Results\n"},
		{name: "expand previous", write: func(w *bytes.Buffer) { ExpandPrevious(w) }, want: "^^^ +++\n"},
		{name: "title made one line", write: func(w *bytes.Buffer) { Section(w, "bench\n  run 2\t") }, want: "--- bench run 2\n"},
		{name: "logf adds newline", write: func(w *bytes.Buffer) { Logf(w, "waited %ds", 12) }, want: "waited 12s\n"},
		{name: "logf keeps newline", write: func(w *bytes.Buffer) { Logf(w, "done\n") }, want: "done\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w bytes.Buffer
			tt.write(&w)
			if diff := cmp.Diff(w.String(), tt.want); diff != "" {
				t.Errorf("output diff (-got +want):\n%s", diff)
			}
		})
	}
}

func TestGroup(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name    string
		fnErr   error
		want    string
		wantErr error
	}{
		{name: "success stays collapsed", want: "--- lm_eval\nrunning\n"},
		{name: "failure expands", fnErr: boom, want: "--- lm_eval\nrunning\n^^^ +++\n", wantErr: boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w bytes.Buffer
			err := Group(&w, "lm_eval", func() error {
				fmt.Fprintln(&w, "running")
				return tt.fnErr
			})
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("Group() error = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(w.String(), tt.want); diff != "" {
				t.Errorf("output diff (-got +want):\n%s", diff)
			}
		})
	}
}
