package buildlog

import (
	"bytes"
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
		{name: "expand previous", write: func(w *bytes.Buffer) { ExpandPrevious(w) }, want: "^^^ +++\n"},
		{name: "title made one line", write: func(w *bytes.Buffer) { Section(w, "bench\n  run 2\t") }, want: "--- bench run 2\n"},
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
