// Command demo runs a shrunk copy of the seed recipe (or of -recipe)
// end to end on this machine, as `make demo`: the runner with its real tools phase (a venv
// from the checked-in lock) and the real lm_eval, against the stand-in
// vLLM server, with gsm8k from a loopback stand-in of the Hugging Face
// Hub. It runs three nights, each judged against the ones before (the
// history file a build's history step would write), so the last one has
// a trend picture; then `runner report` writes the build report and the
// trend page from those nights, and it prints where the results are. With -bfcl the
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
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/benchkite/benchkite/internal/contract"
	"github.com/benchkite/benchkite/runner/internal/baseline"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/fakebin"
	"github.com/benchkite/benchkite/runner/internal/e2e/fakes/hfhub"
	toolset "github.com/benchkite/benchkite/runner/internal/tools"
	"gopkg.in/yaml.v3"
)

const seedRecipe = "workloads/minimax_m3_mi355x.yaml"

// maxModelLenRE finds a context length among serve_args, in either spelling.
var maxModelLenRE = regexp.MustCompile(`(^|\s)--max[-_]model[-_]len([=\s]|$)`)

func main() {
	nights := flag.Int("nights", 3, "nights to run; the last one draws the trend of those before")
	questions := flag.Int("questions", 50, "gsm8k questions in the generated set")
	withBFCL := flag.Bool("bfcl", false, "also run BFCL (simple_python, parallel_multiple) with the real bfcl_eval")
	recipeFile := flag.String("recipe", seedRecipe, "the recipe to run, shrunk; its lm_eval task, if any, must be gsm8k (the Hub stand-in's one data set)")
	flag.Parse()
	if err := run(*recipeFile, *nights, *questions, *withBFCL); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(recipeFile string, nights, questions int, withBFCL bool) error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return fmt.Errorf("run from the checkout's root: %w", err)
	}
	d := &demo{root: root, work: filepath.Join(root, ".demo"), pass: "FAKE_VLLM_ACCURACY"}
	if err := d.buildRunner(); err != nil {
		return err
	}
	if d.fakes, err = fakebin.Dir(); err != nil {
		return err
	}
	if d.recipe, d.recipeName, err = shrunk(recipeFile, filepath.Join(d.work, "recipe.yaml"), withBFCL); err != nil {
		return err
	}
	repo, _ := hfhub.GSM8K(10, questions)
	hub, err := hfhub.Start(repo)
	if err != nil {
		return err
	}
	defer hub.Close()
	d.hubURL = hub.URL()
	if d.serverBin, err = serverPython(d.work, d.fakes); err != nil {
		return err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return err
	}
	d.tools = filepath.Join(cache, "benchkite", "test-tools")
	if withBFCL {
		data, err := bfclData(d.tools)
		if err != nil {
			return err
		}
		d.bfclEnv = []string{"FAKE_VLLM_BFCL_DATA=" + data}
		d.pass += ",FAKE_VLLM_BFCL_DATA"
	}
	if err := d.runNights(nights); err != nil {
		return err
	}
	if err := d.report(); err != nil {
		return err
	}
	d.listResults(withBFCL)
	return nil
}

// demo is one run of the demo: the checkout, its scratch directory and
// what each night runs with.
type demo struct {
	root, work string
	// runner is the runner binary built for the demo.
	runner string
	// recipe is the shrunk recipe's file, recipeName its name.
	recipe, recipeName string
	// fakes holds the stand-in programs; serverBin the server's Python.
	fakes, serverBin string
	// tools is the tool sets' directory, shared with the tests.
	tools  string
	hubURL string
	// pass lists the knobs the runner hands the server; bfclEnv sets
	// the BFCL ones.
	pass    string
	bfclEnv []string
}

// buildRunner builds the runner into the scratch directory.
func (d *demo) buildRunner() error {
	if err := os.MkdirAll(d.work, 0o755); err != nil {
		return err
	}
	d.runner = filepath.Join(d.work, "runner")
	if out, err := exec.Command("go", "build", "-o", d.runner, "./runner").CombinedOutput(); err != nil {
		return fmt.Errorf("build the runner: %w\n%s", err, out)
	}
	return nil
}

// nightAccuracy is the stand-in server's share of right answers, night by
// night.
var nightAccuracy = []string{"0.9", "0.92", "0.86", "0.9", "0.88"}

// runNights runs the recipe night after night, each judged against the
// ones before through the history file a build's history step leaves
// (which `runner report` reads for the trend page), and leaves the file
// as it would be for the build after the last.
func (d *demo) runNights(nights int) error {
	hist := &baseline.File{Version: baseline.FileVersion, Recipes: map[string]baseline.FileRecipe{}}
	histPath := filepath.Join(d.root, filepath.FromSlash(contract.HistoryArtifact))
	if err := os.MkdirAll(filepath.Dir(histPath), 0o755); err != nil {
		return err
	}
	for n := 1; n <= nights; n++ {
		if err := writeJSON(histPath, hist); err != nil {
			return err
		}
		accuracy := nightAccuracy[(n-1)%len(nightAccuracy)]
		fmt.Printf("--- night %d of %d (the stand-in answers %s of gsm8k right)\n", n, nights, accuracy)
		sum, err := d.runNight(n, accuracy, histPath)
		if err != nil {
			return err
		}
		r := hist.Recipes[d.recipeName]
		r.StepKey = "recipe:" + d.recipeName
		r.Nights = append([]baseline.FileNight{{BuildNumber: n, Summary: sum}}, r.Nights...)
		r.Asked = len(r.Nights)
		hist.Recipes[d.recipeName] = r
	}
	return writeJSON(histPath, hist)
}

// runNight runs the runner for night n, whatever its verdict, and returns
// the summary it left.
func (d *demo) runNight(n int, accuracy, histPath string) ([]byte, error) {
	cmd := exec.Command(d.runner, "run", d.recipe, "--health-timeout", "5m", "--baselines", histPath)
	cmd.Dir = d.root
	cmd.Env = d.nightEnv(n, accuracy)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, err
	}
	sum, err := os.ReadFile(filepath.Join(d.root, "results", d.recipeName, "summary.json"))
	if err != nil {
		return nil, fmt.Errorf("night %d left no summary: %w", n, err)
	}
	return sum, nil
}

// nightEnv is the runner's environment for night n: the stand-ins and the
// server's Python first on PATH, the tool sets, the Hub stand-in, the
// night's accuracy and build number, and nothing that would make it
// think it runs on Buildkite.
func (d *demo) nightEnv(n int, accuracy string) []string {
	env := append(os.Environ(),
		"PATH="+d.serverBin+string(os.PathListSeparator)+d.fakes+string(os.PathListSeparator)+os.Getenv("PATH"),
		"BENCHKITE_TOOLS=venv", "BENCHKITE_TOOLS_DIR="+d.tools,
		"PIP_CACHE_DIR="+filepath.Join(d.tools, "pip-cache"),
		"HF_ENDPOINT="+d.hubURL, "HF_HOME="+filepath.Join(d.work, "hf"), "HF_HUB_DISABLE_TELEMETRY=1",
		"FAKE_VLLM_ACCURACY="+accuracy,
		"BENCHKITE_PASS_ENV="+d.pass,
		"BUILDKITE_BUILD_NUMBER="+strconv.Itoa(n))
	env = append(env, d.bfclEnv...)
	return slices.DeleteFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, "BUILDKITE=") || strings.HasPrefix(kv, "BUILDKITE_AGENT_ACCESS_TOKEN=")
	})
}

// report runs `runner report` for the build report and the trend page;
// a red verdict is no failure of the demo.
func (d *demo) report() error {
	fmt.Printf("--- runner report (the build report and the trend page, from %s)\n", contract.HistoryArtifact)
	cmd := exec.Command(d.runner, "report", "--results", contract.ResultsRoot, "--download=false")
	cmd.Dir = d.root
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "BUILDKITE") })
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return err
		}
	}
	return nil
}

// listResults prints where the last night's results and the trend page
// are.
func (d *demo) listResults(withBFCL bool) {
	root := d.root
	dir := filepath.Join("results", d.recipeName)
	fmt.Printf("\nresults of the last night: %s/\n", dir)
	for _, f := range []string{"summary.json", "annotation.md", "trend.svg", "gsm8k/", "lm_eval-gsm8k.log"} {
		if _, err := os.Stat(filepath.Join(root, dir, f)); err == nil {
			fmt.Printf("  %s/%s\n", dir, f)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "results", "_report", "trends.html")); err == nil {
		fmt.Printf("  results/_report/trends.html (the trend page: open it in a browser)\n")
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

// shrunk writes the recipe in file with its benchmark made tiny, as the
// end-to-end tests shrink it, to path, and returns path and the recipe's
// name. The runner checks the rest, as it checks any recipe.
func shrunk(file, path string, withBFCL bool) (string, string, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return "", "", err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return "", "", fmt.Errorf("%s: %w", file, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return "", "", fmt.Errorf("%s: not a recipe (a YAML mapping)", file)
	}
	root := doc.Content[0]
	name, err := mapValue(file, root, "name")
	if err != nil {
		return "", "", err
	}
	vllm, err := mapValue(file, root, "vllm")
	if err != nil {
		return "", "", err
	}
	// The stand-in's default context is 32k; the seed's gsm8k max_length
	// needs more. A recipe that sets its own context keeps it.
	if serve, err := mapValue(file, vllm, "serve_args"); err == nil {
		if !maxModelLenRE.MatchString(serve.Value) {
			serve.Value += " --max-model-len 40960"
		}
	} else {
		vllm.Content = append(vllm.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "serve_args"}, &yaml.Node{Kind: yaml.ScalarNode, Value: "--max-model-len 40960"})
	}
	if bench, err := mapValue(file, root, "vllm_bench"); err == nil {
		configs, err := mapValue(file, bench, "configs")
		if err != nil {
			return "", "", err
		}
		for _, c := range configs.Content {
			for _, kv := range [][2]string{{"input_len", "16"}, {"output_len", "8"}, {"num_prompts", "8"}, {"max_concurrency", "2"}} {
				if n, err := mapValue(file, c, kv[0]); err == nil {
					n.Value = kv[1]
				}
			}
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return "", "", err
	}
	if withBFCL {
		// Ten entries of each; the night's FAKE_VLLM_ACCURACY decides how many the stand-in gets wrong.
		out = append(out, fmt.Sprintf("bfcl:\n  test_categories: [%s]\n  num_threads: 4\n  max_test_cases: {%s: 10, %s: 10}\n",
			strings.Join(demoBFCL, ", "), demoBFCL[0], demoBFCL[1])...)
	}
	return path, name.Value, os.WriteFile(path, out, 0o644)
}

func mapValue(file string, m *yaml.Node, key string) (*yaml.Node, error) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1], nil
		}
	}
	return nil, fmt.Errorf("%s:%d: no %q", file, m.Line, key)
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
