package steps_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/testutil"
	"github.com/benchkite/benchkite/steps"
	"github.com/benchkite/benchkite/steps/steptest"
	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

// goldenPipelines are written to testdata/<name>.json by Marshal, and to
// testdata/<name>.upload.json by MarshalForUpload when that differs.
var goldenPipelines = map[string]steps.Pipeline{
	"minimal": {
		Steps: []steps.Step{
			steps.CommandStep{Label: "hello", Commands: []string{"echo hello"}},
		},
	},
	"command_all_attributes": {
		Env: map[string]string{"TZ": "UTC", "PYTHONUNBUFFERED": "1"},
		Steps: []steps.Step{
			steps.CommandStep{Key: "prepare", Label: "prepare", Commands: []string{"true"}},
			steps.CommandStep{
				Label:    ":rocket: bench MiniMax-M3 on MI355X",
				Key:      "bench:minimax-m3:mi355x",
				Commands: []string{"runner serve", "runner bench", "runner gate"},
				Agents:   map[string]string{"queue": "amd-mi355x", "gpus": "8"},
				Env:      map[string]string{"HF_HOME": "/cache/hf", "VLLM_USE_V1": "1"},
				Secrets:  map[string]string{"HF_TOKEN": "hf-read-token"},
				Plugins: []steps.Plugin{
					{Name: "docker#v5.12.0", Config: map[string]any{
						"image":    "rocm/vllm:nightly",
						"devices":  []string{"/dev/kfd", "/dev/dri"},
						"shm-size": "16g",
					}},
				},
				TimeoutInMinutes: 240,
				Retry: &steps.Retry{
					Automatic: []steps.AutomaticRetry{
						{ExitStatus: steps.ExitStatuses{Codes: []int{-1}}, Limit: 2},
						{SignalReason: "agent_stop", Limit: 1},
						{ExitStatus: steps.ExitStatuses{Codes: []int{137, 143}}, Signal: "SIGKILL", Limit: 0},
					},
					Manual: &steps.ManualRetry{Allowed: ptr(false), PermitOnPassed: ptr(false), Reason: "results are published once"},
				},
				SoftFail:               steps.ExitStatuses{Codes: []int{3, 4}},
				Priority:               -1,
				DependsOn:              []steps.Dependency{{Step: "prepare"}, {Step: "optional", AllowFailure: true}},
				AllowDependencyFailure: true,
				ArtifactPaths:          []string{"results/**/*.json", "logs/*.log"},
				Concurrency:            1,
				ConcurrencyGroup:       "benchkite/amd-mi355x",
				Notify: []any{
					"github_commit_status",
					map[string]any{"slack": "#perf-alerts", "if": "build.state == \"failed\""},
				},
				Skip:        true,
				SkipReason:  "MI355X pool is down for maintenance",
				If:          `build.source == "schedule"`,
				Parallelism: 2,
			},
			steps.CommandStep{Key: "optional", Commands: []string{"exit 0"}, SoftFail: steps.ExitStatuses{Any: true}, Skip: true},
		},
	},
	"group_and_wait": {
		Steps: []steps.Step{
			steps.GroupStep{
				Group: ":amd: MI355X",
				Key:   "mi355x",
				If:    `build.branch == "main"`,
				Steps: []steps.Step{
					&steps.CommandStep{Key: "mi355x-perf", Commands: []string{"runner perf"}},
					steps.WaitStep{},
					steps.CommandStep{Key: "mi355x-eval", Commands: []string{"runner eval"}},
				},
			},
			steps.GroupStep{
				Group:                  ":nvidia: H200",
				Key:                    "h200",
				DependsOn:              []steps.Dependency{{Step: "mi355x"}},
				AllowDependencyFailure: true,
				Steps: []steps.Step{
					steps.CommandStep{Key: "h200-perf", Commands: []string{"runner perf"}},
				},
			},
			steps.WaitStep{
				Key:                    "after-all",
				ContinueOnFailure:      true,
				If:                     "build.state != \"canceled\"",
				DependsOn:              []steps.Dependency{{Step: "mi355x"}, {Step: "h200"}},
				AllowDependencyFailure: true,
			},
			steps.CommandStep{Label: "summary", Commands: []string{"runner summary"}, DependsOn: []steps.Dependency{{Step: "after-all"}}},
		},
	},
	"plugins_only": {
		Steps: []steps.Step{
			steps.CommandStep{
				Label: "plugin does the work",
				Plugins: []steps.Plugin{
					{Name: "docker-compose#v5.10.0", Config: map[string]any{"run": "app", "config": []string{"a.yml", "b.yml"}}},
					{Name: "acme/cache#v1.2.0", Config: nil},
					{Name: "./.buildkite/plugins/local", Config: map[string]any{"nested": map[string]any{"n": 1.5, "ok": true}}},
				},
			},
		},
	},
	"special_characters": {
		Steps: []steps.Step{
			steps.CommandStep{
				Label:    "<b>tags</b> & ampersands, ünïcödé, emoji :white_check_mark:",
				Commands: []string{`echo '<html>' && printf "%s\n" "a&b" > out.txt`, "echo \"quoted\" 'single' \t tab"},
				Env:      map[string]string{"JSON": `{"a": [1, 2]}`},
			},
		},
	},
	"interpolation": {
		Env: map[string]string{"RESULTS": "results/$BUILDKITE_BUILD_NUMBER"},
		Steps: []steps.Step{
			steps.CommandStep{
				Label: "run-time variables: $BUILDKITE_BRANCH",
				Key:   "interp",
				Commands: []string{
					`echo "$HOME ${USER} ${MODEL:-none} ${TAG:0:7} $$ $1"`,
					`test "$(date +%s)" -gt 0 && echo $$$$`,
					`echo \\$HOME ends in $`,
				},
				Env: map[string]string{"OUT": "${RESULTS}/bench.json"},
				Plugins: []steps.Plugin{
					{Name: "docker#v5.12.0", Config: map[string]any{"environment": []string{"HF_TOKEN=$HF_TOKEN"}}},
				},
			},
		},
	},
}

func TestMarshalGolden(t *testing.T) {
	t.Parallel()
	for name, p := range goldenPipelines {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := steps.Marshal(p)
			if err != nil {
				t.Fatalf("Marshal() error = %v", err)
			}
			checkGolden(t, filepath.Join("testdata", name+".json"), got)

			upload, err := steps.MarshalForUpload(p)
			if err != nil {
				t.Fatalf("MarshalForUpload() error = %v", err)
			}
			uploadFile := filepath.Join("testdata", name+".upload.json")
			if bytes.Equal(upload, got) {
				if _, err := os.Stat(uploadFile); err == nil && !testutil.Updating() {
					t.Errorf("%s exists but MarshalForUpload equals Marshal; run go test -update", uploadFile)
				} else if testutil.Updating() {
					os.Remove(uploadFile)
				}
				return
			}
			checkGolden(t, uploadFile, upload)
		})
	}
}

func TestNoStaleGoldenFiles(t *testing.T) {
	t.Parallel()
	for name := range goldenFiles(t) {
		base := strings.TrimSuffix(strings.TrimSuffix(name, ".json"), ".upload")
		if _, ok := goldenPipelines[base]; !ok {
			t.Errorf("testdata/%s belongs to no pipeline in goldenPipelines; delete it", name)
		}
	}
}

func checkGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	testutil.Golden(t, file, got)
}

// goldenFiles returns every golden pipeline in testdata, by file name.
func goldenFiles(t *testing.T) map[string][]byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < len(goldenPipelines) {
		t.Fatalf("found %d golden files, want at least %d; run go test -update", len(names), len(goldenPipelines))
	}
	files := map[string][]byte{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		files[filepath.Base(n)] = b
	}
	return files
}

func TestGoldenFilesParseAndMatchSchema(t *testing.T) {
	t.Parallel()
	for name, b := range goldenFiles(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			steptest.AssertGoPipelineParses(t, b)
			steptest.AssertSchemaValid(t, b)
		})
	}
}

// TestGoldenFilesThroughAgent passes every golden pipeline through the real
// agent's upload dry run, interpolation on. The upload form of a pipeline
// must come out as its plain form; a plain form without an upload form has
// nothing to escape and must come out unchanged.
func TestGoldenFilesThroughAgent(t *testing.T) {
	t.Parallel()
	agent := steptest.AgentBinary(t)
	files := goldenFiles(t)
	for name, b := range files {
		if strings.HasSuffix(name, ".upload.json") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if upload, ok := files[strings.TrimSuffix(name, ".json")+".upload.json"]; ok {
				steptest.AssertAgentReads(t, agent, upload, b)
				return
			}
			steptest.AssertUnchangedByAgent(t, agent, b)
		})
	}
}

// TestAgentInterpolatesUnescapedJSON shows why MarshalForUpload exists: the
// agent rewrites "$" in the plain form.
func TestAgentInterpolatesUnescapedJSON(t *testing.T) {
	t.Parallel()
	agent := steptest.AgentBinary(t)
	b, err := steps.Marshal(goldenPipelines["interpolation"])
	if err != nil {
		t.Fatal(err)
	}
	got := steptest.DryRun(t, agent, b)
	step := got["steps"].([]any)[0].(map[string]any)
	if want := "run-time variables: "; step["label"] != want {
		t.Errorf("agent label = %q, want %q (an unescaped $BUILDKITE_BRANCH is expanded, empty in the dry run)", step["label"], want)
	}
}

func TestMarshalRejectsInvalidPipeline(t *testing.T) {
	t.Parallel()
	p := steps.Pipeline{Steps: []steps.Step{steps.CommandStep{Key: "a b"}}}
	if _, err := steps.Marshal(p); err == nil {
		t.Error("Marshal(invalid pipeline) error = nil, want an error")
	}
	if _, err := steps.MarshalForUpload(p); err == nil {
		t.Error("MarshalForUpload(invalid pipeline) error = nil, want an error")
	}
}

func TestMarshalPointerAndValueStepsAreEqual(t *testing.T) {
	t.Parallel()
	c := steps.CommandStep{Key: "k", Commands: []string{"x"}}
	byValue, err := steps.Marshal(steps.Pipeline{Steps: []steps.Step{c}})
	if err != nil {
		t.Fatal(err)
	}
	byPointer, err := steps.Marshal(steps.Pipeline{Steps: []steps.Step{&c}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(byPointer), string(byValue)); diff != "" {
		t.Errorf("diff (-pointer +value):\n%s", diff)
	}
}

func TestMarshalEmptyPipelineHasSteps(t *testing.T) {
	t.Parallel()
	got, err := steps.Marshal(steps.Pipeline{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "{\n  \"steps\": []\n}\n"; string(got) != want {
		t.Errorf("Marshal(Pipeline{}) = %q, want %q", got, want)
	}
}

func TestMarshalForUploadRejectsUnescapable(t *testing.T) {
	t.Parallel()
	p := steps.Pipeline{Steps: []steps.Step{steps.CommandStep{Commands: []string{`echo \$HOME`}}}}
	_, err := steps.MarshalForUpload(p)
	if !errors.Is(err, steps.ErrUnescapable) || !strings.Contains(err.Error(), "steps[0].command") {
		t.Errorf("MarshalForUpload(`echo \\$HOME`) error = %v, want ErrUnescapable naming steps[0].command", err)
	}
}
