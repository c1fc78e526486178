package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAIPerfFile(t *testing.T) {
	t.Parallel()
	r, err := ParseAIPerfFile("testdata/aiperf/profile_export_aiperf.json")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"request_throughput": 2.5, "request_count": 80, "output_token_throughput": 875, "error_request_count": 0,
		"request_latency_avg_ms": 812.5, "request_latency_p50_ms": 800, "request_latency_p90_ms": 950, "request_latency_p99_ms": 1010.25,
		"request_latency_min_ms": 700, "request_latency_max_ms": 1020, "request_latency_std_ms": 40.1,
		"time_to_first_token_avg_ms": 120.5, "time_to_first_token_p50_ms": 118, "time_to_first_token_p99_ms": 180,
		"inter_token_latency_avg_ms": 9.5, "inter_token_latency_p50_ms": 9.4, "inter_token_latency_p99_ms": 12,
		"output_sequence_length_avg": 350, "output_sequence_length_p50": 350,
	}
	if diff := cmp.Diff(r.Metrics, want); diff != "" {
		t.Errorf("ParseAIPerfFile() metrics diff (-got +want):\n%s", diff)
	}
	if r.Cancelled {
		t.Errorf("Cancelled = true, want false")
	}
}

func TestParseAIPerfFileRejects(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, body, want string }{
		{"not an object", `[1]`, "not a JSON object"},
		{"no unit", `{"request_throughput": {"avg": 1}}`, "metric request_throughput: no unit"},
		{"text statistic", `{"request_throughput": {"unit": "requests/sec", "avg": "fast"}}`, "metric request_throughput: avg:"},
		{"latency in seconds", `{"request_throughput": {"unit": "requests/sec", "avg": 1}, "request_latency": {"unit": "sec", "avg": 1}}`, `metric request_latency is in "sec", want "ms"`},
		{"nothing completed", `{"request_count": {"unit": "requests", "avg": 0}}`, "no request_throughput"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := filepath.Join(t.TempDir(), AIPerfExportFile)
			if err := os.WriteFile(p, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ParseAIPerfFile(p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseAIPerfFile() error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestParseAIPerfFileRefusesImplausible(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), AIPerfExportFile)
	body := `{"request_throughput": {"unit": "requests/sec", "avg": 2}, "time_to_first_token": {"unit": "ms", "avg": 3, "p50": 1.7e308}}`
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ParseAIPerfFile(p)
	if !errors.Is(err, ErrImplausible) || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "time_to_first_token.p50") {
		t.Errorf("ParseAIPerfFile() error = %v, want ErrImplausible naming the file and time_to_first_token.p50", err)
	}
}
