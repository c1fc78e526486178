package e2e

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestE2ECostPerMillionTokens: with a gpu_hour_price in the profile, a
// run's summary prices each bench run's tokens and the annotation says so.
func TestE2ECostPerMillionTokens(t *testing.T) {
	t.Parallel()
	const name = "e2e-cost"
	e := newE2E(t, name, tinyRecipe(name, 1))
	profiles := filepath.Join(e.dir, "agents", "profiles.yaml")
	data, err := os.ReadFile(profiles)
	if err != nil {
		t.Fatal(err)
	}
	head, tail, ok := strings.Cut(string(data), "\nMI355X:\n")
	if !ok {
		t.Fatal("agents/profiles.yaml has no MI355X profile")
	}
	if err := os.WriteFile(profiles, []byte(head+"\nMI355X:\n  gpu_hour_price: 3.6\n"+tail), 0o644); err != nil {
		t.Fatal(err)
	}
	o := e.run("--bench-only")
	checkCode(t, o, 0)
	s := e.summary()
	if len(s.Bench) != 1 || s.Bench[0].Cost == nil || s.Bench[0].Cost.Output == nil || s.Bench[0].Cost.Total == nil {
		t.Fatalf("bench runs %+v, want one priced", s.Bench)
	}
	r := s.Bench[0]
	// 3.6 an hour for one GPU: a thousand tokens a second cost 1 a million.
	if want := 3.6 * float64(s.NumGPUs) / (r.OutputThroughput * 3600 / 1e6); math.Abs(*r.Cost.Output-want) > 1e-9*want {
		t.Errorf("output cost %g, want %g from %g tok/s", *r.Cost.Output, want, r.OutputThroughput)
	}
	body, _ := e.annotation()
	if !strings.Contains(body, "**Cost per million tokens** (short, at 3.60 per GPU-hour): input ") || !strings.Contains(body, "#### Cost per million tokens") {
		t.Errorf("annotation does not give the cost per million tokens:\n%s", body)
	}
}
