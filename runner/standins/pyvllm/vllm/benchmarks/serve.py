"""Stand-in for vLLM's bench entry point, vllm.benchmarks.serve.

It has the real module's interface, add_cli_args(parser) and
main(args) -> dict, so that the runner's bench driver can import it. The
bench itself is the stand-in `vllm bench serve` (first `vllm` on PATH),
run with the very argv the driver parsed: that program declares every
option of the real CLI and rejects the rest as argparse does (status 2),
so the parsing is left to it rather than declared twice.
"""

import argparse
import json
import os
import shutil
import subprocess
from typing import Any, Dict, List, Optional


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    # Keep the argv whole; `main` hands it to the stand-in CLI.
    def keep(args: Optional[List[str]] = None, namespace: Any = None) -> argparse.Namespace:
        return argparse.Namespace(argv=list(args or []))

    parser.parse_args = keep  # type: ignore[method-assign]


def main(args: argparse.Namespace) -> Dict[str, Any]:
    vllm = shutil.which("vllm")
    if vllm is None:
        raise RuntimeError("stand-in vllm.benchmarks.serve: no vllm on PATH")
    rc = subprocess.call([vllm, "bench", "serve", *args.argv])
    if rc != 0:
        raise SystemExit(rc)
    argv = args.argv
    if "--result-filename" in argv:
        path = argv[argv.index("--result-filename") + 1]
        if os.path.exists(path):
            with open(path) as f:
                result: Dict[str, Any] = json.load(f)
                return result
    return {}
