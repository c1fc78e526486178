"""The bench driver against small vllm.benchmarks.serve modules: the
protocol, the statuses the CLI would end with, the fallback status."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import List

import pytest

SOURCE = (Path(__file__).parent / "benchdriver.py").read_text()

# A module with vLLM's entry point's signature: add_cli_args(parser),
# main(args) -> dict, writing --result-filename when --save-result.
ENTRY_POINT = '''
import json
def add_cli_args(parser):
    parser.add_argument("--num-prompts", type=int, default=1000)
    parser.add_argument("--save-result", action="store_true")
    parser.add_argument("--result-filename")
    parser.add_argument("--fail")
def main(args):
    print(args)
    if args.fail == "raise":
        raise RuntimeError("server went away")
    if args.fail == "exit":
        raise SystemExit(5)
    result = {"completed": args.num_prompts, "duration": 0.5}
    print("Successful requests:", args.num_prompts)
    if args.save_result:
        with open(args.result_filename, "w") as f:
            json.dump(result, f)
    return result
'''


def package(root: Path, serve: str) -> Path:
    pkg = root / "vllm" / "benchmarks"
    pkg.mkdir(parents=True)
    (root / "vllm" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "serve.py").write_text(textwrap.dedent(serve))
    return root


def drive(pythonpath: Path, lines: List[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    return subprocess.run([sys.executable, "-c", SOURCE], input="".join(lines), env=env,
                          capture_output=True, text=True, timeout=60)


def argv(*args: str) -> str:
    return json.dumps(["vllm", "bench", "serve", *args]) + "\n"


def marks(stdout: str) -> List[str]:
    return [l for l in stdout.splitlines() if l.startswith("benchkite-bench: ")]


def test_runs_each_argv_and_writes_its_file(tmp_path: Path) -> None:
    root = package(tmp_path / "py", ENTRY_POINT)
    files = [tmp_path / f"r{i}.json" for i in range(3)]
    lines = [argv("--num-prompts", str(10 * (i + 1)), "--save-result", "--result-filename", str(f))
             for i, f in enumerate(files)]
    p = drive(root, lines)
    assert p.returncode == 0, p.stderr
    assert marks(p.stdout) == ["benchkite-bench: ready"] + ["benchkite-bench: start", "benchkite-bench: end rc=0"] * 3
    assert [json.loads(f.read_text())["completed"] for f in files] == [10, 20, 30]
    # The bench's own output comes between its start and end.
    out = p.stdout.splitlines()
    assert out.index("Successful requests: 20") > out.index("benchkite-bench: start", out.index("benchkite-bench: end rc=0"))


def test_statuses_are_the_clis(tmp_path: Path) -> None:
    root = package(tmp_path / "py", ENTRY_POINT)
    p = drive(root, [
        argv("--no-such-flag"),          # argparse: 2, as the CLI
        argv("--fail", "raise"),          # an exception: 1, traceback printed
        argv("--fail", "exit"),           # SystemExit(5): 5
        json.dumps(["vllm", "serve", "m"]) + "\n",  # not a bench argv
        "not json\n",
        argv("--num-prompts", "3"),       # and the driver still works
    ])
    assert p.returncode == 0, p.stderr
    ends = [m for m in marks(p.stdout) if m.startswith("benchkite-bench: end")]
    assert ends == [f"benchkite-bench: end rc={rc}" for rc in (2, 1, 5, 2, 2, 0)]
    assert "unrecognized arguments: --no-such-flag" in p.stderr
    assert "RuntimeError: server went away" in p.stderr


@pytest.mark.parametrize("serve", [
    None,                                    # no vllm at all
    "def add_cli_args(parser):\n    pass\n",  # no main
])
def test_no_entry_point_exits_3(tmp_path: Path, serve: str) -> None:
    root = tmp_path / "py"
    root.mkdir()
    if serve is not None:
        package(root, serve)
    p = drive(root, [argv("--num-prompts", "1")])
    assert p.returncode == 3
    assert marks(p.stdout) == []
    assert "no bench entry point" in p.stderr


def test_import_failure_is_not_missing(tmp_path: Path) -> None:
    # An entry point that is there but breaks is not a missing one.
    root = package(tmp_path / "py", "raise RuntimeError('CUDA init failed')\n")
    p = drive(root, [])
    assert p.returncode == 1
    assert "CUDA init failed" in p.stderr
