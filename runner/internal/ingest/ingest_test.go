package ingest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/google/go-cmp/cmp"
)

func ingestSummary() summary.Summary {
	return summary.Summary{
		Recipe: "minimax_m3-mi355x", Device: "mi355x", Model: "MiniMaxAI/MiniMax-M3-MXFP8", Image: "vllm/vllm-openai-rocm:nightly-abc1234",
		Precision: "fp8", TP: 8, VLLMCommit: "abc1234", Finished: time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC),
		Verdict: summary.VerdictPass, Fingerprint: &summary.Fingerprint{Hash: "f00d"},
		Buildkite: &summary.BuildkiteInfo{Source: "schedule", Branch: "main", PullRequest: "false"},
		Bench: []summary.BenchRun{
			{Name: "8k-in-1k-out-conc-128", Status: summary.StatusOK, Concurrency: 128, InputLen: 8192, OutputLen: 1024,
				TotalThroughputPerGPU: 1200, OutputThroughputPerGPU: 150,
				TTFT: summary.Latency{Median: 250, P99: 900}, TPOT: summary.Latency{Median: 20}, ITL: summary.Latency{Median: 40}, E2EL: summary.Latency{Median: 21000},
				SpecDecode: &summary.SpecDecode{AcceptanceRate: 60}},
			{Name: "failed-run", Status: summary.StatusFailed},
		},
	}
}

func TestIngestPostsDashboardRecords(t *testing.T) {
	t.Parallel()
	var got []Record
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("decode body: %v", err)
		}
	}))
	defer srv.Close()
	if err := Post(context.Background(), srv.Client(), srv.URL, "ingest-token-1", ingestSummary()); err != nil {
		t.Fatalf("ingest: %v", err)
	}
	want := []Record{{
		Origin: Origin{BuildSource: "schedule", Branch: "main", Verdict: "pass", Fingerprint: "f00d"},
		Recipe: "minimax_m3-mi355x", Device: "mi355x", Conc: 128, Image: "vllm/vllm-openai-rocm:nightly-abc1234",
		Model: "MiniMaxAI/MiniMax-M3-MXFP8", Framework: "vllm", Precision: "fp8", ISL: 8192, OSL: 1024, TP: 8,
		TputPerGPU: 1200, OutputTputGPU: 150, MedianTTFT: 0.25, MedianTPOT: 0.02, MedianITL: 0.04, MedianE2EL: 21, P99TTFT: 0.9,
		VLLMCommit: "abc1234", Date: "2026-11-29T03:00:00Z", SpecAcceptRate: 60,
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("posted records diff (-want +got):\n%s", diff)
	}
	if auth != "Bearer ingest-token-1" {
		t.Errorf("Authorization = %q", auth)
	}
}

func TestIngestFailuresAreErrorsWithoutTheToken(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, "token ingest-token-2 is not allowed")
	}))
	defer srv.Close()
	err := Post(context.Background(), srv.Client(), srv.URL, "ingest-token-2", ingestSummary())
	if err == nil || strings.Contains(err.Error(), "ingest-token-2") || !strings.Contains(err.Error(), "403") {
		t.Fatalf("ingest error = %v; want a 403 error without the token", err)
	}
	if calls.Load() != 1 {
		t.Errorf("a 403 was retried: %d calls", calls.Load())
	}
}

func TestAccuracyRecordsAreLMEvalShaped(t *testing.T) {
	t.Parallel()
	s := ingestSummary()
	s.Accuracy = []summary.TaskResult{
		{Task: "gsm8k", Status: summary.StatusOK, Metrics: map[string]float64{"exact_match,flexible-extract": 0.93}},
		{Task: "bfcl_multi_turn", Status: summary.StatusOK, Metrics: map[string]float64{"acc": 0.58}},
		{Task: "bfcl_simple_python", Status: summary.StatusFailed, Error: "no score"},
	}
	var got []map[string]map[string]float64
	for _, r := range AccuracyRecords(s) {
		got = append(got, r.Results)
	}
	want := []map[string]map[string]float64{
		{"gsm8k": {"exact_match,flexible-extract": 0.93}},
		{"bfcl_multi_turn": {"acc,none": 0.58}},
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("AccuracyRecords() results diff (-got +want):\n%s", diff)
	}
}

// A dashboard tells a nightly from a pull request's, a failed or an
// attached run: each is marked, and with nightlyOnly not sent at all.
func TestIngestMarksRunsThatAreNotNights(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(s *summary.Summary)
		marks []string
	}{
		{"a passing night", func(s *summary.Summary) {}, nil},
		{"a pull request", func(s *summary.Summary) { s.Buildkite.Source, s.Buildkite.PullRequest = "webhook", "42" }, []string{"pull_request", "not_scheduled"}},
		{"a failed night", func(s *summary.Summary) { s.Verdict = summary.VerdictFail }, []string{"failed"}},
		{"an attached run", func(s *summary.Summary) {
			s.Phases = []summary.Phase{{Name: summary.PhaseServe, Status: summary.StatusSkipped, Error: "attached to http://10.0.0.1:8000"}}
		}, []string{"attached"}},
		{"outside Buildkite", func(s *summary.Summary) { s.Buildkite = nil }, []string{"not_scheduled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := ingestSummary()
			tt.edit(&s)
			var posts atomic.Int32
			var got []Record
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				posts.Add(1)
				if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
					t.Errorf("decode body: %v", err)
				}
			}))
			defer srv.Close()
			if err := PostRecords(context.Background(), srv.Client(), srv.URL, "", s, false); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !cmp.Equal(got[0].Marks, tt.marks) || got[0].Verdict != s.Verdict {
				t.Errorf("posted %+v, want marks %q", got, tt.marks)
			}
			err := PostRecords(context.Background(), srv.Client(), srv.URL, "", s, true)
			if sent := posts.Load() == 2; sent != (len(tt.marks) == 0) || (err != nil) == (len(tt.marks) == 0) {
				t.Errorf("nightly only: sent %v, error %v; want sent only without marks", sent, err)
			}
		})
	}
}

// A red night's class goes on every record, and once on its own record,
// so that a night that measured nothing still reaches the dashboard.
func TestIngestCarriesTheFailureClass(t *testing.T) {
	t.Parallel()
	var got []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			t.Errorf("decode body: %v", err)
		}
	}))
	defer srv.Close()
	s := ingestSummary()
	s.Verdict = summary.VerdictFail
	s.Failure = &summary.Failure{Class: "perf", Signature: "regression gate"}
	if err := Post(context.Background(), srv.Client(), srv.URL, "", s); err != nil {
		t.Fatalf("ingest: %v", err)
	}
	if len(got) != 2 || got[0]["failure_class"] != "perf" || got[1]["failure_class"] != "perf" || got[1]["verdict"] != "fail" || got[1]["failure_signature"] != "regression gate" {
		t.Errorf("posted %v, want a bench record and a failure record, both of class perf", got)
	}
	s.Bench = nil
	s.Verdict, s.Failure = summary.VerdictError, &summary.Failure{Class: "vllm", Signature: "gpu-oom", Phase: "ready", Line: "torch.OutOfMemoryError: HIP out of memory."}
	got = nil
	if err := Post(context.Background(), srv.Client(), srv.URL, "", s); err != nil {
		t.Fatalf("ingest: %v", err)
	}
	if len(got) != 1 || got[0]["failure_signature"] != "gpu-oom" || got[0]["failure_line"] != "torch.OutOfMemoryError: HIP out of memory." {
		t.Errorf("posted %v, want the one failure record", got)
	}
}
