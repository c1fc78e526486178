// Command demo runs a shrunk copy of the seed recipe end to end on this
// machine, as `make demo`: the runner with its real tools phase (a venv
// from the checked-in lock) and the real lm_eval, against the stand-in
// vLLM server, with gsm8k from a loopback stand-in of the Hugging Face
// Hub. It runs three nights, each judged against the ones before (the
// history file a build's history step would write), so the last one has
// a trend picture, and prints where the results are. With -bfcl the
// recipe also runs two BFCL categories through the real bfcl_eval package,
// which the stand-in server answers from BFCL's shipped answer key.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/fakebin"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/hfhub"
	toolset "github.com/benchkite/benchkite/runner/internal/tools"
	"gopkg.in/yaml.v3"
)

const (
	seedRecipe = "workloads/minimax_m3_mi355x.yaml"
	recipeName = "minimax_m3-mi355x"
)

func main() {
	nights := flag.Int("nights", 3, "nights to run; the last one draws the trend of those before")
	questions := flag.Int("questions", 50, "gsm8k questions in the generated set")
	withBFCL := flag.Bool("bfcl", false, "also run BFCL (simple_python, parallel_multiple) with the real bfcl_eval")
	flag.Parse()
	if err := run(*nights, *questions, *withBFCL); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(nights, questions int, withBFCL bool) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, seedRecipe)); err != nil {
		return fmt.Errorf("run from the checkout's root: %w", err)
	}
	work := filepath.Join(root, ".demo")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	runner, err := buildRunner(work)
	if err != nil {
		return err
	}
	fakes, err := fakebin.Dir()
	if err != nil {
		return err
	}
	recipe, err := shrunkSeed(filepath.Join(work, "seed.yaml"), withBFCL)
	if err != nil {
		return err
	}
	repo, _ := hfhub.GSM8K(10, questions)
	hub, err := hfhub.Start(repo)
	if err != nil {
		return err
	}
	defer hub.Close()

	serverBin, err := serverPython(work, fakes)
	if err != nil {
		return err
	}
	tools, pass, bfclEnv, err := standInEnv(withBFCL)
	if err != nil {
		return err
	}
	hist := &baseline.File{Version: baseline.FileVersion, Recipes: map[string]baseline.FileRecipe{}}
	histPath := filepath.Join(work, "history.json")
	// The stand-in server's share of right answers, night by night.
	accuracy := []string{"0.9", "0.92", "0.86", "0.9", "0.88"}
	for n := 1; n <= nights; n++ {
		if err := writeJSON(histPath, hist); err != nil {
			return err
		}
		env := append(os.Environ(),
			"PATH="+serverBin+string(os.PathListSeparator)+fakes+string(os.PathListSeparator)+os.Getenv("PATH"),
			"BENCHKITE_TOOLS=venv", "BENCHKITE_TOOLS_DIR="+tools,
			"PIP_CACHE_DIR="+filepath.Join(tools, "pip-cache"),
			"HF_ENDPOINT="+hub.URL(), "HF_HOME="+filepath.Join(work, "hf"), "HF_HUB_DISABLE_TELEMETRY=1",
			"FAKE_VLLM_ACCURACY="+accuracy[(n-1)%len(accuracy)],
			"BENCHKITE_PASS_ENV="+pass,
			"BUILDKITE_BUILD_NUMBER="+strconv.Itoa(n))
		env = append(env, bfclEnv...)
		env = slices.DeleteFunc(env, func(kv string) bool {
			return strings.HasPrefix(kv, "BUILDKITE=") || strings.HasPrefix(kv, "BUILDKITE_AGENT_ACCESS_TOKEN=")
		})
		fmt.Printf("--- night %d of %d (the stand-in answers %s of gsm8k right)\n", n, nights, accuracy[(n-1)%len(accuracy)])
		cmd := exec.Command(runner, "run", recipe, "--health-timeout", "5m", "--baselines", histPath)
		cmd.Dir = root
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			return err
		}
		if err := recordNight(hist, root, n); err != nil {
			return err
		}
	}
	printResults(root, withBFCL)
	return nil
}

// buildRunner builds the runner into work.
func buildRunner(work string) (string, error) {
	runner := filepath.Join(work, "runner")
	if out, err := exec.Command("go", "build", "-o", runner, "./runner").CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the runner: %w\n%s", err, out)
	}
	return runner, nil
}

// standInEnv is where the evaluation tools are kept between demos, and
// what the stand-in server needs besides its accuracy: the BFCL data with
// -bfcl. pass names the variables the runner passes on.
func standInEnv(withBFCL bool) (tools, pass string, env []string, err error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", "", nil, err
	}
	tools = filepath.Join(cache, "benchkite", "test-tools")
	pass = "FAKE_VLLM_ACCURACY"
	if !withBFCL {
		return tools, pass, nil, nil
	}
	data, err := bfclData(tools)
	if err != nil {
		return "", "", nil, err
	}
	return tools, pass + ",FAKE_VLLM_BFCL_DATA", []string{"FAKE_VLLM_BFCL_DATA=" + data}, nil
}

// recordNight adds night n's summary to the history the next night is
// judged against, newest first.
func recordNight(hist *baseline.File, root string, n int) error {
	sum, err := os.ReadFile(filepath.Join(root, "results", recipeName, "summary.json"))
	if err != nil {
		return fmt.Errorf("night %d left no summary: %w", n, err)
	}
	r := hist.Recipes[recipeName]
	r.StepKey = "recipe:" + recipeName
	r.Nights = append([]baseline.FileNight{{BuildNumber: n, Summary: sum}}, r.Nights...)
	r.Asked = len(r.Nights)
	hist.Recipes[recipeName] = r
	return nil
}

// printResults lists the files the last night left.
func printResults(root string, withBFCL bool) {
	dir := filepath.Join("results", recipeName)
	fmt.Printf("\nresults of the last night: %s/\n", dir)
	for _, f := range []string{"summary.json", "annotation.md", "trend.svg", "gsm8k/", "lm_eval-gsm8k.log"} {
		if _, err := os.Stat(filepath.Join(root, dir, f)); err == nil {
			fmt.Printf("  %s/%s\n", dir, f)
		}
	}
	files, _ := filepath.Glob(filepath.Join(root, dir, "gsm8k", "*", "*"))
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		fmt.Printf("  %s (written by lm_eval)\n", rel)
	}
	if !withBFCL {
		return
	}
	for _, cat := range demoBFCL {
		scores, _ := filepath.Glob(filepath.Join(root, dir, "bfcl", cat, "score", "*"))
		for _, f := range scores {
			rel, _ := filepath.Rel(root, f)
			fmt.Printf("  %s (written by bfcl_eval)\n", rel)
		}
	}
}

// demoBFCL are the BFCL categories of the demo: one call per answer, and
// several.
var demoBFCL = []string{"simple_python", "parallel_multiple"}

// bfclData is where the lm-eval-bfcl venv the tools phase builds under
// tools holds bfcl_eval's shipped data, the stand-in server's answer key.
// The tools phase runs before the server starts, so it exists by then.
func bfclData(tools string) (string, error) {
	out, err := exec.Command("python3", "-c", `import sys; print("python%d.%d" % sys.version_info[:2])`).Output()
	if err != nil {
		return "", fmt.Errorf("python3: %w", err)
	}
	return filepath.Join(tools, toolset.Locked(true).Key(), "lib", strings.TrimSpace(string(out)), "site-packages", "bfcl_eval", "data"), nil
}

// shrunkSeed writes the seed recipe with its benchmark made tiny, as the
// end-to-end tests shrink it, and returns its path.
func shrunkSeed(path string, withBFCL bool) (string, error) {
	src, err := os.ReadFile(seedRecipe)
	if err != nil {
		return "", err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return "", err
	}
	root := doc.Content[0]
	vllm, err := mapValue(root, "vllm")
	if err != nil {
		return "", err
	}
	serve, err := mapValue(vllm, "serve_args")
	if err != nil {
		return "", err
	}
	// The stand-in's default context is 32k; the task's max_length needs more.
	serve.Value += " --max-model-len 40960"
	bench, err := mapValue(root, "vllm_bench")
	if err != nil {
		return "", err
	}
	configs, err := mapValue(bench, "configs")
	if err != nil {
		return "", err
	}
	for _, c := range configs.Content {
		for key, v := range map[string]string{"input_len": "16", "output_len": "8", "num_prompts": "8", "max_concurrency": "2"} {
			n, err := mapValue(c, key)
			if err != nil {
				return "", err
			}
			n.Value = v
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return "", err
	}
	if withBFCL {
		// Ten entries of each; the night's FAKE_VLLM_ACCURACY decides how many the stand-in gets wrong.
		out = append(out, fmt.Sprintf("bfcl:\n  test_categories: [%s]\n  num_threads: 4\n  max_test_cases: {%s: 10, %s: 10}\n",
			strings.Join(demoBFCL, ", "), demoBFCL[0], demoBFCL[1])...)
	}
	return path, os.WriteFile(path, out, 0o644)
}

func mapValue(m *yaml.Node, key string) (*yaml.Node, error) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1], nil
		}
	}
	return nil, fmt.Errorf("%s has no %q at line %d", seedRecipe, key, m.Line)
}

// serverPython gives the stand-in server a Python of its own, a venv in
// work, named by the "#!" line of a `vllm` script that runs the stand-in:
// the runner's pytest step installs pytest there (the first night), never
// into this machine's python3. It returns the script's directory.
func serverPython(work, fakes string) (string, error) {
	venv := filepath.Join(work, "server-python")
	py := filepath.Join(venv, "bin", "python")
	if _, err := os.Stat(py); err != nil {
		if out, err := exec.Command("python3", "-m", "venv", venv).CombinedOutput(); err != nil {
			return "", fmt.Errorf("make the server's Python: %w\n%s", err, out)
		}
	}
	bin := filepath.Join(work, "server-bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", err
	}
	script := fmt.Sprintf("#!%s\nimport os, sys\nos.execv(%q, [\"vllm\"] + sys.argv[1:])\n", py, filepath.Join(fakes, "vllm"))
	return bin, os.WriteFile(filepath.Join(bin, "vllm"), []byte(script), 0o755)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}
