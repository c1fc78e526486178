package bfcl

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

//go:embed driver.py
var driverPy []byte

// DriverFile is the name the driver is written under in the run directory.
const DriverFile = "bfcl_driver.py"

// ConfigFile is the driver's input, written in each category's root.
const ConfigFile = "benchkite_bfcl.json"

// apiKey is what the driver gives the OpenAI client: vLLM serves without a
// key, and the client refuses to start without one.
const apiKey = "benchkite-no-key"

// Server is the running vLLM server BFCL talks to.
type Server struct {
	// URL is the server's root, such as http://127.0.0.1:8000.
	URL string
	// Model is the served model name requests carry.
	Model string
}

// driverConfig is the JSON the driver reads; field names are its keys.
type driverConfig struct {
	BFCLVersion         string         `json:"bfcl_version"`
	Model               string         `json:"model"`
	BaseURL             string         `json:"base_url"`
	APIKey              string         `json:"api_key"`
	Root                string         `json:"root"`
	LocalServerEndpoint string         `json:"local_server_endpoint"`
	LocalServerPort     int            `json:"local_server_port"`
	Category            string         `json:"category"`
	Leaves              []string       `json:"leaves"`
	NumThreads          int            `json:"num_threads"`
	Temperature         float64        `json:"temperature"`
	MaximumStepLimit    int            `json:"maximum_step_limit"`
	Quotas              map[string]int `json:"quotas"`
}

// Job is a prepared run: where it writes and what to exec.
type Job struct {
	Plan Plan
	// Root is the category's BFCL project root (result/, score/ below it).
	Root string
	// Model is the served model name, which names BFCL's result rows.
	Model string
	Argv  []string
	// Env is the whole environment of the driver: a few variables of the
	// runner's own (never its secrets) and Python settings.
	Env []string
}

// Argv is the command Prepare's Job runs, without preparing anything: what
// `runner plan` shows.
func Argv(p Plan, dir, python string) ([]string, error) {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("bfcl %s: %w", p.Category, err)
	}
	return []string{python, filepath.Join(absDir, DriverFile), filepath.Join(absDir, p.Category, ConfigFile)}, nil
}

// Prepare writes the driver into dir and a fresh project root for the
// plan's category, dir/<category>, holding the driver's config. python is
// the interpreter to run (the provisioned venv's, or python3 on PATH).
// getenv supplies the variables passed through to the driver.
func Prepare(p Plan, dir, python string, srv Server, getenv func(string) string) (*Job, error) {
	if srv.Model == "" {
		return nil, fmt.Errorf("bfcl %s: no served model name", p.Category)
	}
	u, err := url.Parse(srv.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("bfcl %s: server URL %q is not http(s)://host:port", p.Category, srv.URL)
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if ps := u.Port(); ps != "" {
		if port, err = strconv.Atoi(ps); err != nil {
			return nil, fmt.Errorf("bfcl %s: server URL %q: bad port", p.Category, srv.URL)
		}
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("bfcl %s: %w", p.Category, err)
	}
	root := filepath.Join(absDir, p.Category)
	if err := os.RemoveAll(root); err != nil {
		return nil, fmt.Errorf("bfcl %s: clearing %s: %w", p.Category, root, err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("bfcl %s: %w", p.Category, err)
	}
	driver := filepath.Join(absDir, DriverFile)
	if err := os.WriteFile(driver, driverPy, 0o644); err != nil {
		return nil, fmt.Errorf("bfcl %s: writing the driver: %w", p.Category, err)
	}
	cfg := driverConfig{
		BFCLVersion:         Version,
		Model:               srv.Model,
		BaseURL:             strings.TrimRight(srv.URL, "/") + "/v1",
		APIKey:              apiKey,
		Root:                root,
		LocalServerEndpoint: u.Hostname(),
		LocalServerPort:     port,
		Category:            p.Category,
		Leaves:              p.Leaves,
		NumThreads:          p.NumThreads,
		Temperature:         p.Temperature,
		MaximumStepLimit:    p.MaximumStepLimit,
	}
	if p.Subsampled() {
		cfg.Quotas = map[string]int{}
		for _, q := range p.Quotas {
			cfg.Quotas[q.Leaf] = q.Max
		}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bfcl %s: %w", p.Category, err)
	}
	config := filepath.Join(root, ConfigFile)
	if err := os.WriteFile(config, append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("bfcl %s: writing the driver config: %w", p.Category, err)
	}
	return &Job{
		Plan:  p,
		Root:  root,
		Model: srv.Model,
		Argv:  []string{python, driver, config}, // as Argv says
		Env:   driverEnv(getenv),
	}, nil
}

// passEnv are the runner's variables the driver may see: what Python and
// its libraries need to start, and where packages come from. Tokens and
// keys are not among them; BFCL's data ships in its package.
var passEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ", "VIRTUAL_ENV", "PYTHONPATH", "SSL_CERT_FILE", "SSL_CERT_DIR"}

func driverEnv(getenv func(string) string) []string {
	var env []string
	for _, k := range passEnv {
		if v := getenv(k); v != "" {
			env = append(env, k+"="+v)
		}
	}
	// Output reaches the job log as it happens; no bytecode in the venv.
	return append(env, "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1")
}
