package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/hfhub"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/openai"
	"github.com/benchkite/benchkite/runner/internal/summary"
	"github.com/benchkite/benchkite/runner/internal/tools"
	"github.com/google/go-cmp/cmp"
)

// realBFCLRecipe is a small BFCL recipe: two single-turn categories, one
// with one call per answer, one with several, on a server started with a
// tool parser as BFCL's function-calling path needs; and gsm8k, whose
// lm_eval then runs from the same venv as BFCL.
func realBFCLRecipe(name string) string {
	return tinyHead(name, toolCalling) + `lm_eval:
  model_args:
    tokenized_requests: false
    tokenizer_backend: null
  tasks:
` + gsm8kTask + "vllm_bench:\n  configs:\n" + shortBench("short") + `bfcl:
  test_categories: [simple_python, parallel_multiple]
  num_threads: 2
  expect:
    simple_python: {min: 0}
    parallel_multiple: {min: 0}
`
}

// bfclDataDir is where the set's venv, as the tools phase builds it under
// toolsDir, holds bfcl_eval's shipped data: the stand-in server's answer
// key. The tools phase runs before the server starts, so the path exists
// by then even on an empty cache.
func bfclDataDir(t *testing.T, toolsDir string) string {
	t.Helper()
	out, err := exec.Command("python3", "-c", `import sys; print("python%d.%d" % sys.version_info[:2])`).Output()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(toolsDir, tools.Locked(true).Key(), "lib", strings.TrimSpace(string(out)), "site-packages", "bfcl_eval", "data")
}

// TestE2ERealBFCL runs a BFCL recipe with the runner's own tools phase (the
// lm-eval-bfcl lock, pip with hashes) and the real bfcl_eval package,
// whose OpenAI function-calling handler asks the stand-in server; the
// server knows BFCL's shipped answers and gets a chosen share wrong. BFCL's
// own evaluator writes the scores; the test checks, entry by entry, that
// it judged right what the server answered right, and that the runner
// judged BFCL's numbers.
func TestE2ERealBFCL(t *testing.T) {
	t.Parallel()
	requireLinux(t)
	const (
		accuracy = 0.5
		perLeaf  = 6
	)
	name := "e2e-real-bfcl"
	repo, _ := hfhub.GSM8K(10, 20)
	hub, err := hfhub.Start(repo)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hub.Close() })
	e := newE2E(t, name, realBFCLRecipe(name))
	e.withRealBFCL(t)
	e.setenv("HF_ENDPOINT", hub.URL(), "HF_HOME", filepath.Join(e.dir, "hf"), "HF_HUB_DISABLE_TELEMETRY", "1")
	e.setenv("BFCL_MAX_TEST_CASES", fmt.Sprint(perLeaf), "FAKE_VLLM_ACCURACY", fmt.Sprint(accuracy))
	o := e.start("--health-timeout", "5m").waitWithin(realToolsBound)
	s := e.summary()
	set := tools.Locked(true)
	if s.Tools == nil || s.Tools.Mode != "venv" || s.Tools.Lock != set.Key() {
		t.Fatalf("summary tools = %+v, want the venv of lock %s\nstdout:\n%s", s.Tools, set.Key(), lastLines(o.stdout, 60))
	}
	t.Logf("tools phase: %s, reused %t, %.1f s", s.Tools.Lock, s.Tools.Reused, s.Tools.DurationSeconds)
	if v := s.Tools.Versions["bfcl-eval"]; v != tools.BFCLEval.Version {
		t.Errorf("bfcl-eval %q in the venv, want %s", v, tools.BFCLEval.Version)
	}
	if p := s.Phase(summary.PhaseBFCL); p == nil || p.Status != "ok" {
		t.Fatalf("bfcl phase = %+v, want ok\nstdout:\n%s", p, lastLines(o.stdout, 80))
	}

	acc := map[string]summary.TaskResult{}
	for _, a := range s.Accuracy {
		acc[a.Task] = a
	}
	// lm_eval runs from the BFCL set's venv, whose pins are bfcl-eval's.
	if a := acc["gsm8k"]; a.Status != summary.StatusOK || a.Metrics["exact_match,flexible-extract"] <= 0 {
		t.Errorf("gsm8k from the lm-eval-bfcl venv = %+v, want scored\nstdout:\n%s", a, lastLines(o.stdout, 60))
	}
	for _, cat := range []string{"simple_python", "parallel_multiple"} {
		t.Run(cat, func(t *testing.T) {
			root := e.results("bfcl", cat)
			ids := resultIDs(t, root, cat)
			if len(ids) != perLeaf {
				t.Fatalf("BFCL generated %d entries of %s, want %d: %v", len(ids), cat, perLeaf, ids)
			}
			var wantWrong []string
			for _, id := range ids {
				if !openai.IsToolCallAnsweredCorrectly(id, accuracy) {
					wantWrong = append(wantWrong, id)
				}
			}
			sort.Slice(wantWrong, func(i, j int) bool { return idLess(wantWrong[i], wantWrong[j]) })
			if len(wantWrong) == 0 || len(wantWrong) == len(ids) {
				t.Fatalf("%s: %d of %d entries answered wrong at %v: the case needs both", cat, len(wantWrong), len(ids), accuracy)
			}
			sc := scoreFile(t, root, cat)
			wantAcc := float64(len(ids)-len(wantWrong)) / float64(len(ids))
			if sc.Accuracy != wantAcc || sc.Correct != len(ids)-len(wantWrong) || sc.Total != len(ids) {
				t.Errorf("BFCL's score for %s: accuracy %v, %d of %d; the server answered %d of %d right (%v)",
					cat, sc.Accuracy, sc.Correct, sc.Total, len(ids)-len(wantWrong), len(ids), wantAcc)
			}
			if d := cmp.Diff(wantWrong, sc.Wrong); d != "" {
				t.Errorf("entries BFCL judged wrong (-answered wrong +judged wrong):\n%s", d)
			}
			a, ok := acc["bfcl_"+cat]
			if !ok || a.Status != summary.StatusOK {
				t.Fatalf("summary has no scored bfcl_%s: %+v", cat, s.Accuracy)
			}
			// The runner reads BFCL's leaderboard CSV, in percent with two
			// decimals: the judged number is BFCL's, to that precision.
			if got := a.Metrics["acc"]; got < sc.Accuracy-0.00005 || got > sc.Accuracy+0.00005 {
				t.Errorf("judged bfcl_%s acc = %v, BFCL's score file says %v", cat, got, sc.Accuracy)
			}
			if a.Samples != perLeaf {
				t.Errorf("bfcl_%s samples = %d, want %d", cat, a.Samples, perLeaf)
			}
		})
	}
	e.checkUploaded("bfcl-simple_python.log", "bfcl/simple_python/benchkite_bfcl.json")
	e.checkNoLeftovers()
}

// resultIDs are the test entry ids in BFCL's result file of leaf, in
// BFCL's order.
func resultIDs(t *testing.T, root, leaf string) []string {
	t.Helper()
	path := findUnder(t, filepath.Join(root, "result"), "BFCL_v4_"+leaf+"_result.json")
	var ids []string
	eachLine(t, path, func(line []byte) {
		var e struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		ids = append(ids, e.ID)
	})
	return ids
}

// bfclScore is BFCL's score file of a leaf: the summary line, then one
// line per entry judged wrong.
type bfclScore struct {
	Accuracy float64
	Correct  int
	Total    int
	Wrong    []string
}

func scoreFile(t *testing.T, root, leaf string) bfclScore {
	t.Helper()
	path := findUnder(t, filepath.Join(root, "score"), "BFCL_v4_"+leaf+"_score.json")
	var sc bfclScore
	first := true
	eachLine(t, path, func(line []byte) {
		if first {
			first = false
			var head struct {
				Accuracy *float64 `json:"accuracy"`
				Correct  *int     `json:"correct_count"`
				Total    *int     `json:"total_count"`
			}
			if err := json.Unmarshal(line, &head); err != nil || head.Accuracy == nil || head.Correct == nil || head.Total == nil {
				t.Fatalf("%s: first line %s: want accuracy, correct_count, total_count (%v)", path, line, err)
			}
			sc.Accuracy, sc.Correct, sc.Total = *head.Accuracy, *head.Correct, *head.Total
			return
		}
		var e struct {
			ID    string `json:"id"`
			Valid *bool  `json:"valid"`
		}
		if err := json.Unmarshal(line, &e); err != nil || e.ID == "" || e.Valid == nil || *e.Valid {
			t.Fatalf("%s: an entry line %s: want an id judged not valid (%v)", path, line, err)
		}
		sc.Wrong = append(sc.Wrong, e.ID)
	})
	sort.Slice(sc.Wrong, func(i, j int) bool { return idLess(sc.Wrong[i], sc.Wrong[j]) })
	return sc
}

// idLess orders entry ids as BFCL does: by category, then index.
func idLess(a, b string) bool {
	pa, na := splitID(a)
	pb, nb := splitID(b)
	if pa != pb {
		return pa < pb
	}
	return na < nb
}

func splitID(id string) (string, int) {
	i := strings.LastIndex(id, "_")
	var n int
	fmt.Sscan(id[i+1:], &n)
	return id[:i], n
}

func findUnder(t *testing.T, dir, name string) string {
	t.Helper()
	var found []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			found = append(found, path)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("want one %s under %s, found %v", name, dir, found)
	}
	return found[0]
}

func eachLine(t *testing.T, path string, f func([]byte)) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			f([]byte(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
