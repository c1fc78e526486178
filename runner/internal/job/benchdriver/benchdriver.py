"""Run every `vllm bench serve` of a job in one Python process.

The runner starts this as `python3 -c SOURCE` in the Python the server
runs on and writes one JSON array per line on stdin: the argv the CLI
would get ("vllm", "bench", "serve", ...). Each goes through the bench
entry point of vLLM (vllm.benchmarks.serve: add_cli_args, main), which
parses it as the CLI does and writes the same result file; what changes
is that Python, vLLM and torch are imported once per job, not per run.

Protocol lines on stdout, each alone on its line:
  benchkite-bench: ready         the entry point is imported
  benchkite-bench: start         the argv of a run was read
  benchkite-bench: end rc=N      that run ended with the status the CLI would
The process exits 3 before "ready" when the entry point is missing, so that
the runner falls back to the CLI, and 0 at the end of stdin.
"""

import json
import os
import sys
import traceback
from typing import Any, Callable, Optional

MARK = "benchkite-bench: "
NO_ENTRY_POINT = 3
PREFIX = ["vllm", "bench", "serve"]


def mark(what: str) -> None:
    sys.stderr.flush()
    sys.stdout.write(MARK + what + "\n")
    sys.stdout.flush()


def exit_status(code: Any) -> int:
    """The status a process ending with SystemExit(code) has."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def run_one(argv: Any, parser_type: Callable[..., Any], add_cli_args: Callable[[Any], None],
            bench: Callable[[Any], Any]) -> int:
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or argv[:3] != PREFIX:
        print(f"benchkite-bench: not a `vllm bench serve` argv: {argv!r}", file=sys.stderr)
        return 2
    parser = parser_type(prog="vllm bench serve")
    add_cli_args(parser)
    try:
        bench(parser.parse_args(argv[3:]))
    except SystemExit as e:
        return exit_status(e.code)
    except Exception:  # what the CLI would print before exiting 1
        traceback.print_exc()
        return 1
    # main freezes the GC heap (vllm.utils.gc_utils.freeze_gc_heap) after
    # three full collections; left frozen, the freeze of the next run finds
    # little to collect. Unfreezing here made each run collect the whole
    # heap (torch included) again: about a second a run on a slow CPU.
    return 0


def main() -> int:
    sys.stdout.reconfigure(line_buffering=True)
    # What `vllm` does before it imports the bench: spawned workers, and
    # the CPU platform where no accelerator was detected.
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
    platforms: Optional[Any]
    try:
        from vllm import platforms
    except ImportError:
        platforms = None
    if platforms is not None and platforms.current_platform.is_unspecified():
        from vllm.platforms.cpu import CpuPlatform

        platforms.current_platform = CpuPlatform()
    try:
        from vllm.benchmarks.serve import add_cli_args
        from vllm.benchmarks.serve import main as bench
    except ImportError as e:
        print(f"benchkite-bench: no bench entry point: {e}", file=sys.stderr)
        return NO_ENTRY_POINT
    parser_type: Callable[..., Any]
    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser

        parser_type = FlexibleArgumentParser
    except ImportError:
        import argparse

        parser_type = argparse.ArgumentParser
    mark("ready")
    for line in sys.stdin:
        if not line.strip():
            continue
        mark("start")
        try:
            argv = json.loads(line)
        except ValueError as e:
            print(f"benchkite-bench: bad argv line: {e}", file=sys.stderr)
            rc = 2
        else:
            rc = run_one(argv, parser_type, add_cli_args, bench)
        sys.stdout.flush()
        mark(f"end rc={rc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
