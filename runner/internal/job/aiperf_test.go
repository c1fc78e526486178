package job

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/benchkite/benchkite/internal/toollocks"
	"github.com/benchkite/benchkite/runner/internal/proc"
	"github.com/benchkite/benchkite/runner/internal/proc/proctest"
	"github.com/benchkite/benchkite/workloads/workloadstest"

	"github.com/benchkite/benchkite/runner/internal/results"
	"github.com/benchkite/benchkite/workloads"
	"github.com/google/go-cmp/cmp"
)

// Every point the recipe plans comes back from the artifacts: one that
// wrote no export with the problem that fails the run, and a folder the
// recipe did not plan likewise; the aggregate is not a run.
func TestAIPerfExportsEveryPlannedPoint(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "aiperf-sw")
	for _, p := range []string{"concurrency_2", "concurrency_99", "sweep_aggregate"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p, results.AIPerfExportFile), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	planned, err := workloads.AIPerfConfig{Name: "sw", Args: []workloads.BenchArg{{Flag: "--concurrency", Values: []string{"2,4"}}}}.Points()
	if err != nil {
		t.Fatal(err)
	}
	got, err := aiperfExports(dir, planned)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Point   string
		Problem bool
	}
	var rows []row
	for _, p := range got {
		rows = append(rows, row{p.point, p.problem != ""})
	}
	if diff := cmp.Diff(rows, []row{{"concurrency_2", false}, {"concurrency_4", true}, {"concurrency_99", true}}); diff != "" {
		t.Errorf("aiperfExports() diff (-got +want):\n%s", diff)
	}
	if len(got) == 3 && !strings.Contains(got[1].problem, "aiperf wrote no aiperf-sw/concurrency_4/"+results.AIPerfExportFile+" for the planned sweep point concurrency_4") {
		t.Errorf("missing point's problem = %q", got[1].problem)
	}
	// A config that does not sweep needs its one export.
	if _, err := aiperfExports(dir, []workloads.AIPerfPoint{{}}); err == nil || !strings.Contains(err.Error(), "aiperf wrote no "+results.AIPerfExportFile) {
		t.Errorf("aiperfExports(single run, no export) error = %v", err)
	}
}

// An image without aiperf gets the distributions of aiperf's hashed lock
// it lacks, installed into its python3 as the pytest step installs pytest
// (the lock on stdin, hashes required); those it has are left alone, and
// the step asks again before aiperf runs. One that has aiperf gets
// nothing.
func TestContainerAIPerfInstallsFromItsLock(t *testing.T) {
	t.Parallel()
	res := workloadstest.Resolve(t, dockerRecipe, nil)
	ctr := containerName(res, mapGetenv(map[string]string{"BUILDKITE_JOB_ID": "job-1"}))
	entries := parseLock(toollocks.AIPerf().Text)
	var absent strings.Builder
	absent.WriteString("aiperf - ModuleNotFoundError: No module named 'aiperf'\n")
	for i, e := range entries {
		v := "-"
		if i == 0 {
			v = "1.0" // the image has this one: left alone
		}
		absent.WriteString("dist " + e.name + " " + v + "\n")
	}
	fake := proctest.New(t)
	fake.Expect("docker", "exec", ctr, "python3", "-c", aiperfProbe).Stdout(absent.String())
	var stdin string
	fake.Expect("docker", "exec", "-i").Do(func(s proc.Spec) {
		b, _ := io.ReadAll(s.Stdin)
		stdin = string(b)
	})
	fake.Expect("docker", "exec", ctr, "python3", "-c", aiperfProbe).Stdout("aiperf 0.13.0\n")
	var log strings.Builder
	j := &Job{res: res, procs: fake, log: &log, getenv: mapGetenv(map[string]string{"BUILDKITE_JOB_ID": "job-1"})}
	if err := j.containerAIPerf(context.Background()); err != nil {
		t.Fatalf("containerAIPerf() = %v\n%s", err, log.String())
	}
	install := fake.Argvs()[1]
	if !slices.Contains(install, "--require-hashes") || !slices.Equal(install[len(install)-2:], []string{"-r", "/dev/stdin"}) || !slices.Contains(install, ctr) {
		t.Errorf("install = %q, want pip install --require-hashes -r /dev/stdin in %s", install, ctr)
	}
	if strings.Contains(stdin, entries[0].text) || !strings.Contains(stdin, entries[1].text) || !strings.Contains(stdin, "aiperf==") {
		t.Errorf("installed lock text holds the image's own distribution or lacks the missing ones:\n%.400s", stdin)
	}
	if !strings.Contains(log.String(), "runner: installed aiperf 0.13.0 into docker exec "+ctr+" python3") {
		t.Errorf("log:\n%s", log.String())
	}

	has := proctest.New(t)
	has.Expect("docker", "exec", ctr, "python3", "-c", aiperfProbe).Stdout("aiperf 0.13.0\n")
	j = &Job{res: res, procs: has, log: &log, getenv: mapGetenv(map[string]string{"BUILDKITE_JOB_ID": "job-1"})}
	if err := j.containerAIPerf(context.Background()); err != nil || len(has.Argvs()) != 1 {
		t.Errorf("containerAIPerf() with aiperf in the image = %v after %d command(s), want nil after the probe alone", err, len(has.Argvs()))
	}
}
