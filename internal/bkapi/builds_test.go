package bkapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/benchkite/benchkite/internal/bkapi"
	"github.com/benchkite/benchkite/internal/bkapi/bkapitest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var cmpSortStrings = cmpopts.SortSlices(func(a, b string) bool { return a < b })

const (
	testOrg      = "perf-org"
	testPipeline = "nightly-perf"
	testToken    = "bkua_5ecret0token0value0do0not0leak"
)

func newClient(t *testing.T, srv *bkapitest.Server, mod func(*bkapi.Config)) *bkapi.Client {
	t.Helper()
	cfg := bkapi.Config{
		BaseURL:    srv.URL,
		Token:      testToken,
		Org:        testOrg,
		Pipeline:   testPipeline,
		Timeout:    5 * time.Second,
		RetryDelay: time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := bkapi.New(cfg)
	if err != nil {
		t.Fatalf("New() error = %v", err)
	}
	return c
}

func numbers(bs []bkapi.Build) []int {
	var out []int
	for _, b := range bs {
		out = append(out, b.Number)
	}
	return out
}

// listQueries returns the query strings of the build-list requests.
func listQueries(srv *bkapitest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		if r.Method == http.MethodGet && r.Path == "/v2/organizations/"+testOrg+"/pipelines/"+testPipeline+"/builds" {
			out = append(out, r.Query)
		}
	}
	return out
}

func TestListScheduledBuilds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		defaultBranch string
		builds        []bkapitest.Build
		perPage       int
		maxPages      int
		branch        string
		limit         int
		wantNumbers   []int
		wantQueries   []string
	}{
		{
			name:        "follows pagination across three pages",
			builds:      scheduled(1, 2, 3, 4, 5, 6),
			perPage:     2,
			branch:      "main",
			limit:       10,
			wantNumbers: []int{6, 5, 4, 3, 2, 1},
			wantQueries: []string{
				"branch%5B%5D=main&page=1&per_page=100",
				"branch%5B%5D=main&page=2&per_page=100",
				"branch%5B%5D=main&page=3&per_page=100",
			},
		},
		{
			name:        "stops reading pages once the limit is reached",
			builds:      scheduled(1, 2, 3, 4, 5, 6),
			perPage:     2,
			branch:      "main",
			limit:       3,
			wantNumbers: []int{6, 5, 4},
			wantQueries: []string{
				"branch%5B%5D=main&page=1&per_page=100",
				"branch%5B%5D=main&page=2&per_page=100",
			},
		},
		{
			name: "keeps only builds started by a schedule",
			builds: []bkapitest.Build{
				{Number: 1, Source: "schedule"},
				{Number: 2, Source: "ui"},
				{Number: 3, Source: "schedule"},
				{Number: 4, Source: "api"},
				{Number: 5, Source: "webhook"},
				{Number: 6, Source: "trigger_job"},
			},
			perPage:     2,
			branch:      "main",
			limit:       10,
			wantNumbers: []int{3, 1},
			wantQueries: []string{
				"branch%5B%5D=main&page=1&per_page=100",
				"branch%5B%5D=main&page=2&per_page=100",
				"branch%5B%5D=main&page=3&per_page=100",
			},
		},
		{
			name: "asks the API for the branch only",
			builds: []bkapitest.Build{
				{Number: 1},
				{Number: 2, Branch: "feature"},
				{Number: 3},
			},
			branch:      "main",
			limit:       10,
			wantNumbers: []int{3, 1},
			wantQueries: []string{"branch%5B%5D=main&page=1&per_page=100"},
		},
		{
			name:          "uses the pipeline's default branch when none is given",
			defaultBranch: "trunk",
			builds: []bkapitest.Build{
				{Number: 1, Branch: "trunk"},
				{Number: 2, Branch: "main"},
			},
			limit:       10,
			wantNumbers: []int{1},
			wantQueries: []string{"branch%5B%5D=trunk&page=1&per_page=100"},
		},
		{
			name:        "stops at the page bound",
			builds:      scheduled(1, 2, 3, 4, 5, 6),
			perPage:     2,
			maxPages:    2,
			branch:      "main",
			limit:       10,
			wantNumbers: []int{6, 5, 4, 3},
			wantQueries: []string{
				"branch%5B%5D=main&page=1&per_page=100",
				"branch%5B%5D=main&page=2&per_page=100",
			},
		},
		{
			name:   "asks nothing for a zero limit",
			builds: scheduled(1),
			branch: "main",
			limit:  0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
			srv.MaxPerPage = tt.perPage
			if tt.defaultBranch != "" {
				srv.DefaultBranch = tt.defaultBranch
			}
			for _, b := range tt.builds {
				srv.AddBuild(b)
			}
			c := newClient(t, srv, func(cfg *bkapi.Config) { cfg.MaxPages = tt.maxPages })

			got, err := c.ListScheduledBuilds(context.Background(), tt.branch, tt.limit)
			if err != nil {
				t.Fatalf("ListScheduledBuilds(%q, %d) error = %v", tt.branch, tt.limit, err)
			}
			if diff := cmp.Diff(numbers(got), tt.wantNumbers); diff != "" {
				t.Errorf("ListScheduledBuilds(%q, %d) numbers diff (-got +want)\n%s", tt.branch, tt.limit, diff)
			}
			if diff := cmp.Diff(listQueries(srv), tt.wantQueries); diff != "" {
				t.Errorf("build list queries diff (-got +want)\n%s", diff)
			}
		})
	}
}

func scheduled(numbers ...int) []bkapitest.Build {
	var out []bkapitest.Build
	for _, n := range numbers {
		out = append(out, bkapitest.Build{Number: n})
	}
	return out
}

func TestListScheduledBuildsDecodesBuilds(t *testing.T) {
	t.Parallel()
	srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
	created := time.Date(2026, 2, 3, 2, 0, 0, 0, time.UTC)
	finished := created.Add(3 * time.Hour)
	srv.AddBuild(bkapitest.Build{
		Number:     42,
		State:      "failed",
		Commit:     "0123456789abcdef0123456789abcdef01234567",
		Message:    "Nightly perf",
		CreatedAt:  created,
		FinishedAt: finished,
		Jobs: []bkapitest.Job{
			{ID: "job-upload", StepKey: "pipeline-upload", Label: ":pipeline: upload"},
			{ID: "job-wait", Type: "waiter"},
			{ID: "job-bench", StepKey: "bench-llama-h200", Label: "llama on h200", State: "failed"},
		},
	})
	c := newClient(t, srv, nil)

	got, err := c.ListScheduledBuilds(context.Background(), "main", 1)
	if err != nil {
		t.Fatalf("ListScheduledBuilds() error = %v", err)
	}
	want := []bkapi.Build{{
		ID:         "01908131-7d9f-495e-a17b-00000000002a",
		Number:     42,
		State:      "failed",
		Source:     "schedule",
		Branch:     "main",
		Commit:     "0123456789abcdef0123456789abcdef01234567",
		Message:    "Nightly perf",
		WebURL:     "https://buildkite.com/perf-org/nightly-perf/builds/42",
		CreatedAt:  created,
		FinishedAt: finished,
		Jobs: []bkapi.Job{
			{ID: "job-upload", StepKey: "pipeline-upload", Label: ":pipeline: upload", State: "passed", ExitStatus: exitStatus(0), StartedAt: created, FinishedAt: finished},
			{ID: "job-wait", State: "passed"},
			{ID: "job-bench", StepKey: "bench-llama-h200", Label: "llama on h200", State: "failed", ExitStatus: exitStatus(1), StartedAt: created, FinishedAt: finished},
		},
	}}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("ListScheduledBuilds() diff (-got +want)\n%s", diff)
	}
}

// A retried try is listed only when asked for, with where it was retried
// and the agent's signal reason; the latest try is the build's Job.
func TestGetBuildAllTries(t *testing.T) {
	t.Parallel()
	srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
	t0 := time.Date(2026, 2, 3, 2, 0, 0, 0, time.UTC)
	lost := -1
	srv.AddBuild(bkapitest.Build{Number: 7, State: "failed", CreatedAt: t0, FinishedAt: t0.Add(3 * time.Hour), Jobs: []bkapitest.Job{
		{ID: "try-1", StepKey: "recipe:a", State: "failed", ExitStatus: &lost, Retried: true, RetriedInJobID: "try-2",
			Signal: "SIGTERM", SignalReason: "agent_stop", StartedAt: t0, FinishedAt: t0.Add(40 * time.Minute)},
		{ID: "try-2", StepKey: "recipe:a", State: "passed", StartedAt: t0.Add(45 * time.Minute), FinishedAt: t0.Add(2 * time.Hour)},
	}})
	c := newClient(t, srv, nil)
	latest, err := c.GetBuild(context.Background(), 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(latest.Jobs) != 1 || latest.Jobs[0].ID != "try-2" {
		t.Errorf("GetBuild() jobs = %+v, want the latest try only", latest.Jobs)
	}
	all, err := c.GetBuildAllTries(context.Background(), 7)
	if err != nil {
		t.Fatal(err)
	}
	want := []bkapi.Job{
		{ID: "try-1", StepKey: "recipe:a", Label: "recipe:a", State: "failed", ExitStatus: &lost, Retried: true, RetriedInJobID: "try-2",
			Signal: "SIGTERM", SignalReason: "agent_stop", StartedAt: t0, FinishedAt: t0.Add(40 * time.Minute)},
		{ID: "try-2", StepKey: "recipe:a", Label: "recipe:a", State: "passed", ExitStatus: exitStatus(0), StartedAt: t0.Add(45 * time.Minute), FinishedAt: t0.Add(2 * time.Hour)},
	}
	if diff := cmp.Diff(all.Jobs, want); diff != "" {
		t.Errorf("GetBuildAllTries() jobs diff (-got +want)\n%s", diff)
	}
	if j, ok := all.Job("recipe:a"); !ok || j.ID != "try-2" {
		t.Errorf("Job(recipe:a) = %+v, %v; want the latest try", j, ok)
	}
}

// A build created while pages are read shifts the list; the build that
// moves from the end of page 1 to the top of page 2 is kept once.
func TestListScheduledBuildsDropsShiftedDuplicates(t *testing.T) {
	t.Parallel()
	srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
	srv.MaxPerPage = 2
	for _, b := range scheduled(1, 2, 3, 4) {
		srv.AddBuild(b)
	}
	srv.Intercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Query().Get("page") == "2" && len(listQueries(srv)) == 2 {
			srv.AddBuild(bkapitest.Build{Number: 5})
		}
		return false
	})
	c := newClient(t, srv, nil)

	got, err := c.ListScheduledBuilds(context.Background(), "main", 10)
	if err != nil {
		t.Fatalf("ListScheduledBuilds() error = %v", err)
	}
	if diff := cmp.Diff(numbers(got), []int{4, 3, 2, 1}); diff != "" {
		t.Errorf("ListScheduledBuilds() numbers diff (-got +want)\n%s", diff)
	}
}

func TestBuildJob(t *testing.T) {
	t.Parallel()
	b := bkapi.Build{Jobs: []bkapi.Job{
		{ID: "w"},
		{ID: "a", StepKey: "bench-a", State: "passed"},
		{ID: "b", StepKey: "bench-b", State: "failed"},
	}}
	tests := []struct {
		stepKey   string
		wantState string
		wantOK    bool
	}{
		{stepKey: "bench-a", wantState: "passed", wantOK: true},
		{stepKey: "bench-b", wantState: "failed", wantOK: true},
		{stepKey: "bench-c", wantState: "", wantOK: false},
		{stepKey: "", wantState: "", wantOK: true}, // the waiter has no key
	}
	for _, tt := range tests {
		j, ok := b.Job(tt.stepKey)
		if j.State != tt.wantState || ok != tt.wantOK {
			t.Errorf("b.Job(%q) = %+v, %v; want state %q, %v", tt.stepKey, j, ok, tt.wantState, tt.wantOK)
		}
	}
}

func TestCreateBuild(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		req        bkapi.CreateBuildRequest
		wantBody   bkapitest.CreatedBuild
		wantKeys   []string
		wantNumber int
	}{
		{
			name: "sends branch, commit, message and env",
			req: bkapi.CreateBuildRequest{
				Branch:  "main",
				Commit:  "0123456789abcdef0123456789abcdef01234567",
				Message: "Bisect vLLM regression on llama-h200",
				Env: map[string]string{
					"VLLM_COMMIT":       "89abcdef",
					"BENCHKITE_RECIPES": "llama-h200",
				},
			},
			wantBody: bkapitest.CreatedBuild{
				Branch:  "main",
				Commit:  "0123456789abcdef0123456789abcdef01234567",
				Message: "Bisect vLLM regression on llama-h200",
				Env: map[string]string{
					"VLLM_COMMIT":       "89abcdef",
					"BENCHKITE_RECIPES": "llama-h200",
				},
			},
			wantKeys:   []string{"author", "branch", "commit", "env", "message"},
			wantNumber: 8,
		},
		{
			name: "defaults to the default branch at HEAD",
			req:  bkapi.CreateBuildRequest{Message: "Rerun"},
			wantBody: bkapitest.CreatedBuild{
				Branch:  "main",
				Commit:  "HEAD",
				Message: "Rerun",
			},
			wantKeys:   []string{"author", "branch", "commit", "message"},
			wantNumber: 8,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := bkapitest.NewServer(t, testOrg, testPipeline, testToken)
			srv.AddBuild(bkapitest.Build{Number: 7})
			c := newClient(t, srv, nil)

			got, err := c.CreateBuild(context.Background(), tt.req)
			if err != nil {
				t.Fatalf("CreateBuild() error = %v", err)
			}
			if got.Number != tt.wantNumber || got.WebURL != "https://buildkite.com/perf-org/nightly-perf/builds/8" {
				t.Errorf("CreateBuild() = number %d, web URL %q; want %d, %q", got.Number, got.WebURL, tt.wantNumber, "https://buildkite.com/perf-org/nightly-perf/builds/8")
			}
			bodies := srv.Created()
			if len(bodies) != 1 {
				t.Fatalf("server got %d create requests, want 1", len(bodies))
			}
			var keys []string
			for k := range bodies[0].Raw {
				keys = append(keys, k)
			}
			if diff := cmp.Diff(keys, tt.wantKeys, cmpSortStrings); diff != "" {
				t.Errorf("create body keys diff (-got +want)\n%s", diff)
			}
			bodies[0].Raw = nil
			if diff := cmp.Diff(bodies[0], tt.wantBody); diff != "" {
				t.Errorf("create body diff (-got +want)\n%s", diff)
			}
		})
	}
}

func exitStatus(n int) *int { return &n }
