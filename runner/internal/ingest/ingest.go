// Package ingest posts a run's bench results to an optional dashboard, in
// the record shape the dashboards of the system benchkite replaces read.
package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/benchkite/benchkite/runner/internal/summary"
)

// Origin says which run a record comes from, so that a dashboard can
// tell a nightly from a pull request's, a failed or an attached run.
type Origin struct {
	BuildSource string `json:"build_source,omitempty"` // schedule, webhook, ui, api, trigger_job
	Branch      string `json:"branch,omitempty"`
	PullRequest string `json:"pull_request,omitempty"`
	Verdict     string `json:"verdict"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// Marks are what sets the run apart from a passing scheduled night
	// served by the runner: pull_request, attached (a server the runner
	// did not start), failed (verdict fail or error), not_scheduled.
	Marks []string `json:"marks,omitempty"`
}

// OriginOf is where s came from.
func OriginOf(s summary.Summary) Origin {
	p := Origin{Verdict: s.Verdict}
	if s.Fingerprint != nil {
		p.Fingerprint = s.Fingerprint.Hash
	}
	if b := s.Buildkite; b != nil {
		p.BuildSource, p.Branch = b.Source, b.Branch
		if b.PullRequest != "" && b.PullRequest != "false" {
			p.PullRequest = b.PullRequest
			p.Marks = append(p.Marks, "pull_request")
		}
	}
	if ph := s.Phase(summary.PhaseServe); ph != nil && ph.Status == summary.StatusSkipped && strings.HasPrefix(ph.Error, "attached to ") {
		p.Marks = append(p.Marks, "attached")
	}
	if s.Verdict == summary.VerdictFail || s.Verdict == summary.VerdictError {
		p.Marks = append(p.Marks, "failed")
	}
	if p.BuildSource != "schedule" {
		p.Marks = append(p.Marks, "not_scheduled")
	}
	return p
}

// Record is one bench run in the dashboard's shape: the fields the
// perf dashboards of the system we replace read, latencies in seconds.
type Record struct {
	Origin
	Recipe         string  `json:"recipe"`
	Device         string  `json:"device"`
	Conc           int     `json:"conc"`
	Image          string  `json:"image"`
	Model          string  `json:"model"`
	Framework      string  `json:"framework"`
	Precision      string  `json:"precision"`
	ISL            int     `json:"isl"`
	OSL            int     `json:"osl"`
	TP             int     `json:"tp"`
	TputPerGPU     float64 `json:"tput_per_gpu"`
	OutputTputGPU  float64 `json:"output_tput_per_gpu"`
	MedianTTFT     float64 `json:"median_ttft"`
	MedianTPOT     float64 `json:"median_tpot"`
	MedianITL      float64 `json:"median_itl"`
	MedianE2EL     float64 `json:"median_e2el"`
	P99TTFT        float64 `json:"p99_ttft"`
	VLLMCommit     string  `json:"vllm_commit,omitempty"`
	BuildURL       string  `json:"build_url,omitempty"`
	Date           string  `json:"date"`
	SpecAcceptRate float64 `json:"spec_acceptance_rate,omitempty"`
	// Provenance is how to re-run the night (the run's manifest).
	Provenance *summary.Provenance `json:"provenance,omitempty"`
	// FailureClass and FailureSignature say why the night was red
	// (summary.Failure), on every record of a red night.
	FailureClass     string `json:"failure_class,omitempty"`
	FailureSignature string `json:"failure_signature,omitempty"`
}

// FailureRecord is a red night's class, posted once per night so that a
// night that measured nothing still reaches the dashboard.
type FailureRecord struct {
	Origin
	Recipe           string `json:"recipe"`
	Device           string `json:"device"`
	Model            string `json:"model"`
	Image            string `json:"image"`
	VLLMCommit       string `json:"vllm_commit,omitempty"`
	BuildURL         string `json:"build_url,omitempty"`
	Date             string `json:"date"`
	Verdict          string `json:"verdict"`
	FailureClass     string `json:"failure_class"`
	FailureSignature string `json:"failure_signature"`
	FailurePhase     string `json:"failure_phase,omitempty"`
	FailureLine      string `json:"failure_line,omitempty"`
	BlockedBy        string `json:"blocked_by,omitempty"`
}

// Failure is the record of s's class, or nil for a night without one.
func Failure(s summary.Summary) *FailureRecord {
	f := s.Failure
	if f == nil {
		return nil
	}
	rec := &FailureRecord{
		Origin: OriginOf(s),
		Recipe: s.Recipe, Device: s.Device, Model: s.Model, Image: s.Image, VLLMCommit: s.VLLMCommit,
		Date: s.Finished.UTC().Format(time.RFC3339), Verdict: s.Verdict,
		FailureClass: f.Class, FailureSignature: f.Signature, FailurePhase: f.Phase, FailureLine: f.Line, BlockedBy: f.BlockedBy,
	}
	if s.Buildkite != nil {
		rec.BuildURL = s.Buildkite.BuildURL
	}
	return rec
}

// AccuracyRecord is one accuracy result (an lm_eval task or a BFCL
// category) in lm_eval's results shape, {"results": {task: {metric: v}}},
// with lm_eval's metric names: BFCL's acc is "acc,none", as the dashboards
// of the system benchkite replaces read it.
type AccuracyRecord struct {
	Origin
	Recipe     string                        `json:"recipe"`
	Device     string                        `json:"device"`
	Model      string                        `json:"model"`
	Image      string                        `json:"image"`
	Framework  string                        `json:"framework"`
	Precision  string                        `json:"precision"`
	TP         int                           `json:"tp"`
	VLLMCommit string                        `json:"vllm_commit,omitempty"`
	BuildURL   string                        `json:"build_url,omitempty"`
	Date       string                        `json:"date"`
	Results    map[string]map[string]float64 `json:"results"`
}

// AccuracyRecords are the measured accuracy results of s, one record each.
func AccuracyRecords(s summary.Summary) []AccuracyRecord {
	var out []AccuracyRecord
	for _, a := range s.Accuracy {
		if a.Status != summary.StatusOK || len(a.Metrics) == 0 {
			continue
		}
		metrics := map[string]float64{}
		for k, v := range a.Metrics {
			if !strings.Contains(k, ",") {
				k += ",none" // lm_eval's name of a metric without a filter
			}
			metrics[k] = v
		}
		rec := AccuracyRecord{
			Origin: OriginOf(s),
			Recipe: s.Recipe, Device: s.Device, Model: s.Model, Image: s.Image, Framework: "vllm",
			Precision: s.Precision, TP: s.TP, VLLMCommit: s.VLLMCommit, Date: s.Finished.UTC().Format(time.RFC3339),
			Results: map[string]map[string]float64{a.Task: metrics},
		}
		if s.Buildkite != nil {
			rec.BuildURL = s.Buildkite.BuildURL
		}
		out = append(out, rec)
	}
	return out
}

// Records are the bench runs of s that measured something, one record each.
func Records(s summary.Summary) []Record {
	var out []Record
	for _, r := range s.Bench {
		if r.Status != summary.StatusOK {
			continue
		}
		rec := Record{
			Origin: OriginOf(s),
			Recipe: s.Recipe, Device: s.Device, Conc: r.Concurrency, Image: s.Image, Model: s.Model,
			Framework: "vllm", Precision: s.Precision, ISL: r.InputLen, OSL: r.OutputLen, TP: s.TP,
			TputPerGPU: r.TotalThroughputPerGPU, OutputTputGPU: r.OutputThroughputPerGPU,
			MedianTTFT: r.TTFT.Median / 1000, MedianTPOT: r.TPOT.Median / 1000, MedianITL: r.ITL.Median / 1000,
			MedianE2EL: r.E2EL.Median / 1000, P99TTFT: r.TTFT.P99 / 1000,
			VLLMCommit: s.VLLMCommit, Date: s.Finished.UTC().Format(time.RFC3339), Provenance: s.Provenance,
		}
		if s.Buildkite != nil {
			rec.BuildURL = s.Buildkite.BuildURL
		}
		if r.SpecDecode != nil {
			rec.SpecAcceptRate = r.SpecDecode.AcceptanceRate
		}
		if s.Failure != nil {
			rec.FailureClass, rec.FailureSignature = s.Failure.Class, s.Failure.Signature
		}
		out = append(out, rec)
	}
	return out
}

// Post posts the run's records to the dashboard. It is best effort: the
// caller logs a failure as a warning and the step's verdict is unchanged.
// The token goes only into the Authorization header, never into a message.
func Post(ctx context.Context, client *http.Client, url, token string, s summary.Summary) error {
	return PostRecords(ctx, client, url, token, s, false)
}

// ErrNotSent says a run was not posted because it is not a plain
// scheduled night (nightlyOnly).
var ErrNotSent = fmt.Errorf("ingest: not sent")

// PostRecords is Post; with nightlyOnly a run with any mark (a pull
// request's, a failed or attached run, one not scheduled) is not sent
// and ErrNotSent says why.
func PostRecords(ctx context.Context, client *http.Client, url, token string, s summary.Summary, nightlyOnly bool) error {
	if marks := OriginOf(s).Marks; nightlyOnly && len(marks) > 0 {
		return fmt.Errorf("%w: the run is %s, and only scheduled nights that did not fail are sent", ErrNotSent, strings.Join(marks, ", "))
	}
	var records []any
	for _, r := range Records(s) {
		records = append(records, r)
	}
	for _, r := range AccuracyRecords(s) {
		records = append(records, r)
	}
	if f := Failure(s); f != nil {
		records = append(records, f)
	}
	if len(records) == 0 {
		return nil
	}
	body, err := json.Marshal(records)
	if err != nil {
		return fmt.Errorf("ingest: encode: %w", err)
	}
	return postBody(ctx, client, url, token, nil, body)
}

// postBody posts one JSON body, trying again on a server error or a
// refusal for load; the token goes only into the Authorization header.
func postBody(ctx context.Context, client *http.Client, url, token string, headers map[string]string, body []byte) error {
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("ingest: %w", ctx.Err())
			case <-time.After(time.Duration(attempt) * time.Second):
			}
		}
		reqCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
		req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			cancel()
			return fmt.Errorf("ingest: %w", err)
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			cancel()
			last = fmt.Errorf("ingest: post: %s", redact(err.Error(), token))
			continue
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		cancel()
		switch {
		case resp.StatusCode < 300:
			return nil
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
			last = fmt.Errorf("ingest: %s: %s", resp.Status, redact(strings.TrimSpace(string(msg)), token))
		default:
			return fmt.Errorf("ingest: %s: %s", resp.Status, redact(strings.TrimSpace(string(msg)), token))
		}
	}
	return last
}

func redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "***")
}
