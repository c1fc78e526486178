package workloads

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const linkedRecipe = `name: NAME
gpu: H200
num_gpus: 1
vllm: {model: org/m}
lm_eval: {tasks: [{name: gsm8k, num_fewshot: 5}]}
`

// A recipe file that is a dangling link or leaves the folder is that
// file's problem: the others still load, and nothing outside the folder is
// read.
func TestLoadDirSymlinks(t *testing.T) {
	t.Parallel()
	profiles := defaultProfiles(t)
	root := t.TempDir()
	outside := filepath.Join(root, "secret.yaml")
	if err := os.WriteFile(outside, []byte("name: hunter2-secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "workloads")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write("ok.yaml", strings.Replace(linkedRecipe, "NAME", "ok", 1))
	write("base.yml", strings.Replace(linkedRecipe, "NAME", "linked", 1))
	link("base.yml", "sibling.yaml")
	link("./sibling.yaml", "chain.yaml.disabled") // not *.yaml: not loaded
	link("missing.yaml", "dangling.yaml")
	link(outside, "absolute.yaml")
	link("../secret.yaml", "relative.yaml")
	link("loop.yaml", "loop.yaml")

	c, err := LoadDir(os.DirFS(dir), ".", profiles)
	if err != nil {
		t.Fatalf("LoadDir() error = %v, want the bad links as invalid recipes", err)
	}
	var names []string
	for _, r := range c.Recipes {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff(names, []string{"ok", "linked"}); diff != "" {
		t.Errorf("LoadDir() valid recipes diff (-got +want):\n%s", diff)
	}
	got := map[string]string{}
	for file, ps := range c.Invalid {
		got[file] = ps.Error()
	}
	want := map[string]string{
		"absolute.yaml": "absolute.yaml:1:1: is a symbolic link to \"" + outside + "\", outside the recipe folder",
		"relative.yaml": `relative.yaml:1:1: is a symbolic link to "../secret.yaml", outside the recipe folder`,
		"dangling.yaml": "dangling.yaml:1:1: cannot read recipe: symbolic link to missing.yaml: no such file or directory",
		"loop.yaml":     "loop.yaml:1:1: cannot read recipe: more than 8 symbolic links",
	}
	for file, msg := range got {
		if w, ok := want[file]; ok && strings.HasPrefix(msg, w) {
			got[file] = w
		}
	}
	if diff := cmp.Diff(got, want); diff != "" {
		t.Errorf("LoadDir() invalid files diff (-got +want):\n%s", diff)
	}
	for file, msg := range got {
		if strings.Contains(msg, "hunter2") {
			t.Errorf("problems of %s quote the file outside the folder: %s", file, msg)
		}
	}
}
