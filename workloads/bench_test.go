package workloads

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benchkite/benchkite/agents"
)

// BenchmarkLoad10000 loads a catalog of 10,000 recipes, variants of the
// shipped EAGLE3 recipe with distinct names, to keep the loader cheap
// enough for a pipeline step that reads every recipe on every build.
func BenchmarkLoad10000(b *testing.B) {
	const n = 10000
	seed, err := os.ReadFile("minimax_m3_mi355x.yaml")
	if err != nil {
		b.Fatal(err)
	}
	base, err := os.ReadFile("minimax_m3_nospec_mi355x.yaml")
	if err != nil {
		b.Fatal(err)
	}
	const seedName = "name: minimax_m3-mi355x\n"
	if !strings.Contains(string(seed), seedName) {
		b.Fatalf("seed recipe lost its %q line", seedName)
	}
	fsys := fstest.MapFS{"workloads/minimax_m3_nospec_mi355x.yaml": {Data: base}}
	for i := range n - 1 {
		src := strings.Replace(string(seed), seedName, fmt.Sprintf("name: minimax_m3-mi355x-%05d\n", i), 1)
		fsys[fmt.Sprintf("workloads/recipe_%05d.yaml", i)] = &fstest.MapFile{Data: []byte(src)}
	}
	profiles, err := agents.Default()
	if err != nil {
		b.Fatal(err)
	}

	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		c, err := LoadDir(fsys, "workloads", profiles)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Err(); err != nil {
			b.Fatal(err)
		}
		if len(c.Recipes) != n {
			b.Fatalf("loaded %d recipes, want %d", len(c.Recipes), n)
		}
	}
}
