package tools

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// standIn is a small wheel built by the test in place of a real
// distribution: the same name, version, extras and console scripts, with
// modules that only say what they are.
type standIn struct {
	name    string // distribution name as in METADATA, e.g. lm_eval
	version string
	// extras maps an extra to the distributions it requires.
	extras map[string][]string
	// scripts maps a console script to its entry point.
	scripts map[string]string
	// modules maps a file inside the wheel to its content.
	modules map[string]string
}

// lmEvalStandIn has lm_eval's two console scripts and its api extra.
func lmEvalStandIn(version string) standIn {
	return standIn{
		name:    "lm_eval",
		version: version,
		extras:  map[string][]string{"api": {"requests", "aiohttp", "tenacity", "tqdm", "tiktoken"}},
		scripts: map[string]string{
			"lm-eval": "lm_eval.__main__:cli_evaluate",
			"lm_eval": "lm_eval.__main__:cli_evaluate",
		},
		modules: map[string]string{
			"lm_eval/__init__.py": fmt.Sprintf("__version__ = %q\n", version),
			"lm_eval/__main__.py": "import sys\n\n\ndef cli_evaluate():\n" +
				fmt.Sprintf("    print(\"lm_eval stand-in %s\", \" \".join(sys.argv[1:]))\n", version),
		},
	}
}

func bfclStandIn(version string) standIn {
	return standIn{
		name:    "bfcl_eval",
		version: version,
		scripts: map[string]string{"bfcl": "bfcl_eval.__main__:cli"},
		modules: map[string]string{
			"bfcl_eval/__init__.py": "",
			"bfcl_eval/__main__.py": "def cli():\n    print(\"bfcl stand-in\")\n",
		},
	}
}

// plainStandIn is a distribution with one module of its name.
func plainStandIn(name, version string) standIn {
	return standIn{name: name, version: version, modules: map[string]string{name + ".py": ""}}
}

// apiDeps are stand-ins for what lm-eval's api extra requires.
func apiDeps() []standIn {
	var out []standIn
	for _, n := range []string{"requests", "aiohttp", "tenacity", "tqdm", "tiktoken"} {
		out = append(out, plainStandIn(n, "1.0"))
	}
	return out
}

// writeWheel writes w as NAME-VERSION-py3-none-any.whl into dir.
func writeWheel(t *testing.T, dir string, w standIn) {
	t.Helper()
	distInfo := w.name + "-" + w.version + ".dist-info"
	files := map[string]string{}
	for path, content := range w.modules {
		files[path] = content
	}
	var meta strings.Builder
	fmt.Fprintf(&meta, "Metadata-Version: 2.1\nName: %s\nVersion: %s\n", w.name, w.version)
	for _, extra := range slices.Sorted(maps.Keys(w.extras)) {
		fmt.Fprintf(&meta, "Provides-Extra: %s\n", extra)
		for _, dep := range w.extras[extra] {
			fmt.Fprintf(&meta, "Requires-Dist: %s; extra == %q\n", dep, extra)
		}
	}
	files[distInfo+"/METADATA"] = meta.String()
	files[distInfo+"/WHEEL"] = "Wheel-Version: 1.0\nGenerator: benchkite-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
	if len(w.scripts) > 0 {
		var ep strings.Builder
		ep.WriteString("[console_scripts]\n")
		for _, s := range slices.Sorted(maps.Keys(w.scripts)) {
			fmt.Fprintf(&ep, "%s = %s\n", s, w.scripts[s])
		}
		files[distInfo+"/entry_points.txt"] = ep.String()
	}
	var record strings.Builder
	for _, path := range slices.Sorted(maps.Keys(files)) {
		sum := sha256.Sum256([]byte(files[path]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", path, base64.RawURLEncoding.EncodeToString(sum[:]), len(files[path]))
	}
	record.WriteString(distInfo + "/RECORD,,\n")
	files[distInfo+"/RECORD"] = record.String()

	name := fmt.Sprintf("%s-%s-py3-none-any.whl", w.name, w.version)
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	for _, path := range slices.Sorted(maps.Keys(files)) {
		fw, err := zw.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write([]byte(files[path])); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
