package job

import (
	"strings"
	"testing"

	"github.com/benchkite/benchkite/workloads/workloadstest"
)

// TestVariantBindIfPresent: /dev/dri/by-path is mounted when the host has
// it and only then; ZE_AFFINITY_MASK goes by name when the job has it.
// Not parallel: it replaces the host check.
func TestVariantBindIfPresent(t *testing.T) {
	saved := hostPathExists
	t.Cleanup(func() { hostPathExists = saved })
	for _, present := range []bool{true, false} {
		hostPathExists = func(p string) bool { return present && p == "/dev/dri/by-path" }
		res := workloadstest.Resolve(t, "../../testdata/recipes/xpu.yaml", nil)
		j := New(Config{Port: 9000}, res, Deps{Getenv: mapGetenv(nil), Environ: []string{"PATH=/bin", "ZE_AFFINITY_MASK=0,1"}})
		specs, err := j.serveSpecs()
		if err != nil {
			t.Fatal(err)
		}
		argv := strings.Join(specs[0].Argv, " ")
		if got := strings.Contains(argv, " -v /dev/dri/by-path:/dev/dri/by-path "); got != present {
			t.Errorf("host has /dev/dri/by-path: %v; docker run mounts it: %v\n%s", present, got, argv)
		}
		if !strings.Contains(argv, " -e ZE_AFFINITY_MASK ") || strings.Contains(argv, "0,1") {
			t.Errorf("docker run argv = %s, want ZE_AFFINITY_MASK by name", argv)
		}
	}
}

// TestFingerprintAIPerf: another aiperf shape is another series of nights.
func TestFingerprintAIPerf(t *testing.T) {
	t.Parallel()
	res := workloadstest.Resolve(t, "../../testdata/recipes/aiperf_mi300x.yaml", nil)
	before := fingerprint(res)
	res.Recipe.AIPerf.Configs[0].Args[len(res.Recipe.AIPerf.Configs[0].Args)-1].Values = []string{"80,200"}
	after := fingerprint(res)
	if before.Hash == after.Hash {
		t.Errorf("fingerprint unchanged by another --request-count: %v", after.Parts.Bench)
	}
	if !strings.Contains(strings.Join(before.Parts.Bench, "\n"), "aiperf-prefix aiperf==0.13.0 args=--endpoint-type=chat --streaming= ") {
		t.Errorf("fingerprint bench parts = %q", before.Parts.Bench)
	}
}
