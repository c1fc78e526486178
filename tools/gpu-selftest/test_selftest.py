"""The self-test's own logic, without a GPU: how it times bench runs and
which rows it calls defects."""

import selftest
from selftest import Row, Scenario

LOG = """\
$ vllm bench serve --backend openai --save-result --result-filename /w/results/x/bench/bench-a-run-1.json   (in the bench driver)
Successful requests: 64
runner: bench run took 3.30 s in the bench driver
$ vllm bench serve --backend openai --save-result --result-filename /w/results/x/bench/bench-a-run-2.json   (in the bench driver)
runner: bench run took 3.10 s in the bench driver, started 0.05 s after the previous run ended
"""


def test_bench_timing_pairs_runs_with_their_files() -> None:
    between, how = selftest.bench_timing(LOG, {"bench-a-run-1.json": 3.0, "bench-a-run-2.json": 2.9})
    assert [round(b, 2) for b in between] == [0.30, 0.25]
    assert how == ["in the bench driver"] * 2


def night(**kw: object) -> Row:
    r = Row("night-plain", "", verdict="fail", exit=1, failure_class="accuracy", bench_phase_s=10.0,
            bench_duration_s=9.0, max_between_s=0.3, gpu_mib_before=0, gpu_mib_after=0)
    for k, v in kw.items():
        setattr(r, k, v)
    return r


def test_judge() -> None:
    sc = selftest.scenarios()[0]
    cases = [
        (night(), []),
        (night(max_between_s=2.0), ["bench runs 2.0 s apart beyond their duration, target <= 1.5"]),
        (night(procs_left=2), ["2 process(es) left"]),
        (night(gpu_mib_after=500), ["GPU memory 500 MiB after, 0 before"]),
        (night(failure_class="vllm", cause="boom"), ["red for something else than accuracy (class vllm): 'boom'"]),
    ]
    for row, want in cases:
        selftest.judge(sc, row, True)
        assert row.failed == want


def test_judge_cancel_headline() -> None:
    sc = Scenario("term-bench", "", "", "error", 143, action="term2")
    row = Row("term-bench", "", verdict="error", exit=143, headline=":x: r: error", seconds=3)
    selftest.judge(sc, row, True)
    assert row.failed == ["headline does not say canceled"]


def test_table_marks_failures() -> None:
    text = selftest.table([night(), night(failed=["x | y"])])
    lines = text.splitlines()
    assert lines[2].endswith("| ok |")
    assert lines[3].endswith("| FAIL: x \\| y |")
    assert "10.00 − 9.00 = 1.00 (0)" in lines[2]
