package job

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeClock advances by step on every reading.
type fakeClock struct {
	t    time.Time
	step time.Duration
}

func (c *fakeClock) now() time.Time { c.t = c.t.Add(c.step); return c.t }

func TestServerLogView(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		step   time.Duration // clock advance per progress line
		writes []string
		want   string
	}{
		{
			name:   "plain lines pass through, split anywhere",
			writes: []string{"INFO 12-01 starting\nWARN", "ING x\n"},
			want:   "INFO 12-01 starting\nWARNING x\n",
		},
		{
			name: "a progress bar shows as it updates, rate-limited, and its last state",
			step: 2 * time.Second,
			writes: []string{
				"Loading safetensors:   0% 0/64\r", "Loading safetensors:  10% 6/64\r", "Loading safetensors:  20% 13/64\r",
				"Loading safetensors:  50% 32/64\r", "Loading safetensors: 100% 64/64\r\n", "INFO model loaded\n",
			},
			// Shown at 2 s and 8 s (≥ 5 s apart); the 100 % line ends with \r\n.
			want: "Loading safetensors:   0% 0/64\nLoading safetensors:  50% 32/64\nLoading safetensors: 100% 64/64\nINFO model loaded\n",
		},
		{
			name:   "a held progress line shows before the next plain line",
			step:   time.Second,
			writes: []string{"Capturing CUDA graphs:  1/67\r", "Capturing CUDA graphs: 30/67\r", "INFO graphs captured\n"},
			want:   "Capturing CUDA graphs:  1/67\nCapturing CUDA graphs: 30/67\nINFO graphs captured\n",
		},
		{
			name: "access lines are counted, not shown",
			writes: []string{
				"(APIServer pid=7) INFO:     127.0.0.1:40312 - \"POST /v1/completions HTTP/1.1\" 200 OK\n",
				"INFO:     127.0.0.1:40313 - \"GET /health HTTP/1.1\" 200 OK\n",
				"INFO 12-01 Avg prompt throughput: 812.4 tokens/s\n",
				"INFO:     127.0.0.1:40314 - \"POST /v1/chat/completions HTTP/1.1\" 400 Bad Request\n",
			},
			want: "INFO 12-01 Avg prompt throughput: 812.4 tokens/s\n(3 request log lines are in server.log, not shown here)\n",
		},
		{
			name:   "an unended last line is shown at close",
			writes: []string{"Traceback (most recent call last)"},
			want:   "Traceback (most recent call last)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out strings.Builder
			clock := &fakeClock{step: tt.step}
			v := newServerLogView(&out, progressEvery, clock.now)
			for _, w := range tt.writes {
				if n, err := v.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if err := v.Close(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(out.String(), tt.want); diff != "" {
				t.Errorf("job log diff (-got +want):\n%s", diff)
			}
		})
	}
}
