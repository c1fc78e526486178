package benchdriver

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		want Event
		ok   bool
	}{
		{"benchkite-bench: ready", Event{Kind: "ready"}, true},
		{"benchkite-bench: start", Event{Kind: "start"}, true},
		{"benchkite-bench: end rc=0", Event{Kind: "end"}, true},
		{"benchkite-bench: end rc=2\r", Event{Kind: "end", RC: 2}, true},
		{"benchkite-bench: end rc=", Event{}, false},
		{"benchkite-bench: later", Event{}, false},
		{"Successful requests: 64", Event{}, false},
		{" benchkite-bench: ready", Event{}, false}, // only at the line's start
	}
	for _, tt := range tests {
		got, ok := ParseLine(tt.line)
		if ok != tt.ok || !cmp.Equal(got, tt.want) {
			t.Errorf("ParseLine(%q) = %+v, %v; want %+v, %v", tt.line, got, ok, tt.want, tt.ok)
		}
	}
}

func TestRequest(t *testing.T) {
	t.Parallel()
	got, err := Request([]string{"vllm", "bench", "serve", "--label", `a "b"`})
	if err != nil {
		t.Fatal(err)
	}
	if want := `["vllm","bench","serve","--label","a \"b\""]` + "\n"; string(got) != want {
		t.Errorf("Request = %q, want %q", got, want)
	}
}

// TestDriverPytest runs the driver's own tests (test_benchdriver.py),
// which start it with python3 against small entry-point modules.
func TestDriverPytest(t *testing.T) {
	t.Parallel()
	if err := exec.Command("python3", "-c", "import pytest").Run(); err != nil {
		t.Skipf("python3 cannot import pytest (%v): test_benchdriver.py not run", err)
	}
	cmd := exec.Command("python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_benchdriver.py")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pytest test_benchdriver.py: %v\n%s", err, out)
	}
}

// TestSourceHasNoQuote: plans print the source as one shell word in
// single quotes; a quote in it would print as '\”.
func TestSourceHasNoQuote(t *testing.T) {
	t.Parallel()
	if i := strings.IndexByte(Source, '\''); i >= 0 {
		t.Errorf("benchdriver.py has a single quote at byte %d", i)
	}
}
