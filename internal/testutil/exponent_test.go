package testutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExponents(t *testing.T) {
	t.Parallel()
	text := "output_throughput = 1.765e+04: first nights\n" +
		"p = 1e-05 and 2.5E+21\n" +
		"image sha256:1e57ab3e9 and commit 4e5f1e2; 17,650 tok/s; 0.00412 ms; v1.2e3\n" +
		"x=3e-07,y\n" +
		"Uploading 31afd2b1-895e-4378-b37c-7671d63cb4c3 server.log; job 0190b1e4-0000-4000-8000-000000000042\n" +
		"delta -1e-05"
	want := []string{
		"1.765e+04 in: output_throughput = 1.765e+04: first nights",
		"1e-05 in: p = 1e-05 and 2.5E+21",
		"2.5E+21 in: p = 1e-05 and 2.5E+21",
		"3e-07 in: x=3e-07,y",
		"1e-05 in: delta -1e-05",
	}
	if diff := cmp.Diff(Exponents(text), want); diff != "" {
		t.Errorf("Exponents() diff (-got +want):\n%s", diff)
	}
}
