package baseline_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

const (
	org      = "perf-org"
	pipeline = "nightly-perf"
	token    = "bkua_baseline0test0token"
	recipe   = "llama-h200"
	stepKey  = "bench-llama-h200"
)

func summary(n int) []byte {
	return fmt.Appendf(nil, `{"recipe":%q,"output_throughput":%d}`, recipe, 1000+n)
}

// night is a scheduled build whose recipe job passed and uploaded its
// summary.
type night struct {
	number    int
	source    string    // default schedule
	state     string    // recipe job state; default passed
	noJob     bool      // the recipe did not run
	soft      *int      // the job soft-failed with this exit status
	running   bool      // build not finished
	artifacts []art     // default: the summary at SummaryPath(recipe)
	finished  time.Time // zero: a fixed time
}

type art struct {
	path    string
	state   string
	content []byte
}

func (n night) add(srv *bkapitest.Server) {
	jobID := fmt.Sprintf("job-%d", n.number)
	b := bkapitest.Build{
		Number: n.number,
		Source: n.source,
		Commit: fmt.Sprintf("%040d", n.number),
		Jobs:   []bkapitest.Job{{ID: "upload-" + jobID, StepKey: "pipeline-upload"}},
	}
	if !n.running {
		b.FinishedAt = time.Date(2026, 1, 1, 5, 0, 0, 0, time.UTC).AddDate(0, 0, n.number)
	}
	if !n.noJob {
		b.Jobs = append(b.Jobs, bkapitest.Job{ID: jobID, StepKey: stepKey, State: n.state, SoftFailed: n.soft != nil, ExitStatus: n.soft})
	}
	srv.AddBuild(b)
	arts := n.artifacts
	if arts == nil {
		arts = []art{{path: contract.SummaryPath(recipe), content: summary(n.number)}}
	}
	for _, a := range arts {
		srv.AddArtifact(n.number, bkapitest.Artifact{JobID: jobID, Path: a.path, State: a.state, Content: a.content})
	}
}

func newFetcher(t *testing.T, srv *bkapitest.Server, f baseline.Fetcher) baseline.Fetcher {
	t.Helper()
	c, err := bkapi.New(bkapi.Config{
		BaseURL:    srv.URL,
		Token:      token,
		Org:        org,
		Pipeline:   pipeline,
		Timeout:    5 * time.Second,
		RetryDelay: time.Millisecond,
	})
	if err != nil {
		t.Fatalf("bkapi.New() error = %v", err)
	}
	f.API = c
	return f
}

func wantNight(n int) baseline.Night {
	return baseline.Night{
		BuildNumber: n,
		BuildURL:    fmt.Sprintf("https://buildkite.com/%s/%s/builds/%d", org, pipeline, n),
		CreatedAt:   time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC).AddDate(0, 0, n),
		Commit:      fmt.Sprintf("%040d", n),
		Summary:     summary(n),
		JobID:       fmt.Sprintf("job-%d", n),
	}
}

func failedNight(n int) baseline.Night {
	night := wantNight(n)
	night.Failed = true
	return night
}

func wantMiss(n int, reason baseline.MissReason, detail string) baseline.Miss {
	return baseline.Miss{
		BuildNumber: n,
		BuildURL:    fmt.Sprintf("https://buildkite.com/%s/%s/builds/%d", org, pipeline, n),
		CreatedAt:   time.Date(2026, 1, 1, 2, 0, 0, 0, time.UTC).AddDate(0, 0, n),
		Reason:      reason,
		Detail:      detail,
	}
}

// ignoreDetail drops details that carry server ports.
var ignoreDetail = cmpopts.IgnoreFields(baseline.Miss{}, "Detail")

func TestLast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		nights    []night
		fetcher   baseline.Fetcher
		intercept func(http.ResponseWriter, *http.Request) bool
		n         int
		opts      []cmp.Option
		want      baseline.Result
		wantErr   bool
	}{
		{
			name:   "newest n passed nights",
			nights: []night{{number: 1}, {number: 2}, {number: 3}, {number: 4}},
			n:      3,
			want:   baseline.Result{Nights: []baseline.Night{wantNight(4), wantNight(3), wantNight(2)}},
		},
		{
			// A recipe's first nights have no baseline: they soft-fail as
			// unverified, and count as passed; any other soft failure is a
			// failed night.
			name: "unverified (soft-failed, exit 75) nights passed; other soft failures failed",
			nights: []night{
				{number: 1, state: "failed", soft: ptrInt(contract.ExitUnverified)},
				{number: 2, state: "failed", soft: ptrInt(1)},
				{number: 3, state: "failed", soft: ptrInt(contract.ExitUnverified)},
			},
			n:    3,
			want: baseline.Result{Nights: []baseline.Night{wantNight(3), failedNight(2), wantNight(1)}},
		},
		{
			// A failed night measured what it measured: the noise and an
			// open regression need it. One that did not finish, or where
			// the recipe did not run, is missed.
			name: "failed nights count, marked; canceled or absent ones are missed",
			nights: []night{
				{number: 1},
				{number: 2, state: "failed"},
				{number: 3},
				{number: 4, noJob: true},
				{number: 5, state: "canceled"},
				{number: 6, state: "timed_out"},
			},
			n: 3,
			want: baseline.Result{
				Nights: []baseline.Night{wantNight(3), failedNight(2), wantNight(1)},
				Missed: []baseline.Miss{
					wantMiss(6, baseline.MissJobNotCompleted, "job state timed_out"),
					wantMiss(5, baseline.MissJobNotCompleted, "job state canceled"),
					wantMiss(4, baseline.MissJobAbsent, `no job with step key "bench-llama-h200"`),
				},
			},
		},
		{
			name: "only the exact artifact path counts",
			nights: []night{
				{number: 1},
				{number: 2, artifacts: []art{
					{path: "results/llama-h200-fp8/summary.json", content: []byte("{}")},
					{path: "logs/results/llama-h200/summary.json", content: []byte("{}")},
					{path: "results/llama-h200/summary.json.bak", content: []byte("{}")},
				}},
				{number: 3, artifacts: []art{}},
				{number: 4, artifacts: []art{{path: contract.SummaryPath(recipe), state: "error"}}},
			},
			n: 2,
			want: baseline.Result{
				Nights: []baseline.Night{wantNight(1)},
				Missed: []baseline.Miss{
					wantMiss(4, baseline.MissArtifactAbsent, "artifact results/llama-h200/summary.json is error"),
					wantMiss(3, baseline.MissArtifactAbsent, "no artifact results/llama-h200/summary.json"),
					wantMiss(2, baseline.MissArtifactAbsent, "no artifact results/llama-h200/summary.json"),
				},
			},
		},
		{
			name: "a summary that is not JSON is unusable",
			nights: []night{
				{number: 1},
				{number: 2, artifacts: []art{{path: contract.SummaryPath(recipe), content: []byte("throughput: 12")}}},
			},
			n: 2,
			want: baseline.Result{
				Nights: []baseline.Night{wantNight(1)},
				Missed: []baseline.Miss{wantMiss(2, baseline.MissArtifactUnusable, "results/llama-h200/summary.json is not valid JSON")},
			},
		},
		{
			// One such night would reach every later gate and chart.
			name: "a summary with a number no run measures is unusable",
			nights: []night{
				{number: 1},
				{number: 2, artifacts: []art{{path: contract.SummaryPath(recipe), content: []byte(`{"recipe":"llama-h200","bench":[{"output_throughput":1.7976931348623157e308}]}`)}}},
			},
			n: 2,
			want: baseline.Result{
				Nights: []baseline.Night{wantNight(1)},
				Missed: []baseline.Miss{wantMiss(2, baseline.MissArtifactUnusable, "build 2's results/llama-h200/summary.json: bench[0].output_throughput: 1.7976931348623157e+308 is not a plausible measurement (beyond ±1e+15)")},
			},
		},
		{
			name:   "an expired artifact is missed, not fatal",
			nights: []night{{number: 1}, {number: 2}},
			intercept: func(w http.ResponseWriter, r *http.Request) bool {
				if !strings.Contains(r.URL.Path, "/builds/2/") || !strings.HasSuffix(r.URL.Path, "/download") {
					return false
				}
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprint(w, `{"message":"No artifact found"}`)
				return true
			},
			n:    2,
			opts: []cmp.Option{ignoreDetail},
			want: baseline.Result{
				Nights: []baseline.Night{wantNight(1)},
				Missed: []baseline.Miss{wantMiss(2, baseline.MissArtifactUnusable, "")},
			},
		},
		{
			name: "builds not started by the schedule are ignored",
			nights: []night{
				{number: 1},
				{number: 2, source: "ui"},
				{number: 3, source: "api", state: "failed"},
			},
			n:    2,
			want: baseline.Result{Nights: []baseline.Night{wantNight(1)}},
		},
		{
			name: "the running build and unfinished builds are passed over",
			nights: []night{
				{number: 1},
				{number: 2, running: true, state: "running"},
				{number: 3, running: true},
				{number: 4, running: true, state: "running"},
			},
			fetcher: baseline.Fetcher{CurrentBuild: 4},
			n:       3,
			want:    baseline.Result{Nights: []baseline.Night{wantNight(3), wantNight(1)}},
		},
		{
			name:    "the current build and later ones are never a baseline",
			nights:  []night{{number: 1}, {number: 2}, {number: 3}, {number: 4}},
			fetcher: baseline.Fetcher{CurrentBuild: 3},
			n:       3,
			want:    baseline.Result{Nights: []baseline.Night{wantNight(2), wantNight(1)}},
		},
		{
			name: "lookback bounds the builds examined",
			nights: []night{
				{number: 1},
				{number: 2, state: "canceled"},
				{number: 3, state: "canceled"},
			},
			fetcher: baseline.Fetcher{Lookback: 2},
			n:       1,
			want: baseline.Result{Missed: []baseline.Miss{
				wantMiss(3, baseline.MissJobNotCompleted, "job state canceled"),
				wantMiss(2, baseline.MissJobNotCompleted, "job state canceled"),
			}},
			wantErr: true,
		},
		{
			name:   "zero nights asked",
			nights: []night{{number: 1}},
			n:      0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := bkapitest.NewServer(t, org, pipeline, token)
			for _, n := range tt.nights {
				n.add(srv)
			}
			srv.Intercept(tt.intercept)
			f := newFetcher(t, srv, tt.fetcher)

			got, err := f.Last(context.Background(), recipe, stepKey, tt.n)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("Last(%q, %q, %d) error = %v, want error %v", recipe, stepKey, tt.n, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, baseline.ErrNoBaseline) {
				t.Errorf("Last() error = %v, want errors.Is ErrNoBaseline", err)
			}
			if diff := cmp.Diff(got, tt.want, tt.opts...); diff != "" {
				t.Errorf("Last(%q, %q, %d) diff (-got +want)\n%s", recipe, stepKey, tt.n, diff)
			}
		})
	}
}

func TestLastErrors(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	tests := []struct {
		name    string
		fetcher func(t *testing.T) baseline.Fetcher
		wantIs  []error
		wantMsg string
	}{
		{
			name:    "no token",
			fetcher: func(*testing.T) baseline.Fetcher { return baseline.Fetcher{} },
			wantIs:  []error{baseline.ErrNoBaseline, bkapi.ErrNoToken},
			wantMsg: "is an API token configured?",
		},
		{
			name: "token refused",
			fetcher: func(t *testing.T) baseline.Fetcher {
				srv := bkapitest.NewServer(t, org, pipeline, "bkua_another0token")
				return newFetcher(t, srv, baseline.Fetcher{})
			},
			wantIs:  []error{baseline.ErrNoBaseline, bkapi.ErrUnauthorized},
			wantMsg: "read_artifacts",
		},
		{
			name: "API unreachable after retries",
			fetcher: func(t *testing.T) baseline.Fetcher {
				c, err := bkapi.New(bkapi.Config{
					BaseURL: closed.URL, Token: token, Org: org, Pipeline: pipeline,
					Retries: 2, RetryDelay: time.Millisecond,
				})
				if err != nil {
					t.Fatalf("bkapi.New() error = %v", err)
				}
				return baseline.Fetcher{API: c, Branch: "main"}
			},
			wantIs:  []error{baseline.ErrNoBaseline, bkapi.ErrUnavailable},
			wantMsg: "connection refused",
		},
		{
			name: "artifact listing refused",
			fetcher: func(t *testing.T) baseline.Fetcher {
				srv := bkapitest.NewServer(t, org, pipeline, token)
				night{number: 1}.add(srv)
				srv.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
					if !strings.HasSuffix(r.URL.Path, "/artifacts") {
						return false
					}
					w.WriteHeader(http.StatusForbidden)
					fmt.Fprint(w, `{"message":"Your access token does not have the read_artifacts scope"}`)
					return true
				})
				return newFetcher(t, srv, baseline.Fetcher{})
			},
			wantIs:  []error{baseline.ErrNoBaseline, bkapi.ErrUnauthorized},
			wantMsg: "build 1:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := tt.fetcher(t).Last(context.Background(), recipe, stepKey, 3)
			if err == nil {
				t.Fatal("Last() error = nil, want one")
			}
			for _, target := range tt.wantIs {
				if !errors.Is(err, target) {
					t.Errorf("Last() error = %v, want errors.Is %v", err, target)
				}
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Last() error = %q, want it to contain %q", err, tt.wantMsg)
			}
			if strings.Contains(err.Error(), token) {
				t.Errorf("Last() error = %q contains the token", err)
			}
		})
	}
}

func ptrInt(n int) *int { return &n }
