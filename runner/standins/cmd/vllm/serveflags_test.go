package main

import (
	"os"
	"path/filepath"
	"testing"
)

// productFlagTable is the table the product checks recipes against, from
// this package's directory.
var productFlagTable = filepath.Join("..", "..", "..", "..", "workloads", "vllm_serve_flags.txt")

// TestServeFlagsMatchProduct: the stand-in accepts exactly the flags lint
// accepts, so a recipe lint passes is one the stand-in serves.
func TestServeFlagsMatchProduct(t *testing.T) {
	t.Parallel()
	product, err := os.ReadFile(productFlagTable)
	if err != nil {
		t.Fatal(err)
	}
	if string(product) != serveFlagsText {
		t.Errorf("serve_flags.txt differs from %s: run `make vllm-flags`, or copy it", productFlagTable)
	}
}

func TestLookupServeFlag(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		flag, want string
		ok         bool
	}{
		{"--max-model-len", "--max-model-len", true},
		{"--max-model", "--max-model-len", true},
		{"--max", "", false},
		{"--no-such-flag", "", false},
	} {
		if got, ok := lookupServeFlag(c.flag); got != c.want || ok != c.ok {
			t.Errorf("lookupServeFlag(%q) = %q, %v; want %q, %v", c.flag, got, ok, c.want, c.ok)
		}
	}
}
