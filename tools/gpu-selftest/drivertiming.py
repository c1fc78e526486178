"""Time the bench driver alone against a running server: each run's wall
time (its start line to its end line) less the `duration` its result
file records.

    python3 drivertiming.py --python PY --base-url URL --model NAME [--runs 5] [--prompts 128]

PY is the Python with vLLM; the driver is the checkout's unless --driver names one.
"""

import argparse
import json
import os
import subprocess
import tempfile
import time
from typing import List

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = os.path.join(HERE, "..", "..", "runner", "internal", "job", "benchdriver", "benchdriver.py")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="python3")
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--prompts", type=int, default=128)
    ap.add_argument("--driver", default=DRIVER, help="another version of benchdriver.py, to compare")
    a = ap.parse_args()
    with open(a.driver) as f:
        src = f.read()
    out = tempfile.mkdtemp()
    p = subprocess.Popen([a.python, "-c", src], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    assert p.stdin is not None and p.stdout is not None

    def until(word: str) -> float:
        assert p.stdout is not None
        for line in p.stdout:
            if line.startswith("benchkite-bench: " + word):
                return time.time()
        raise SystemExit(f"the driver ended before {word!r}")

    t = time.time()
    print(f"driver ready after {until('ready') - t:.2f} s")
    beyond: List[float] = []
    for i in range(a.runs):
        result = os.path.join(out, f"run-{i}.json")
        argv = ["vllm", "bench", "serve", "--backend", "openai", "--base-url", a.base_url, "--model", a.model,
                "--dataset-name", "random", "--random-input-len", "512", "--random-output-len", "32",
                "--ignore-eos", "--num-prompts", str(a.prompts), "--max-concurrency", "16", "--temperature", "0",
                "--percentile-metrics", "ttft,tpot,itl,e2el", "--save-result", "--result-filename", result]
        t0 = time.time()
        p.stdin.write(json.dumps(argv) + "\n")
        p.stdin.flush()
        t1 = until("end")
        with open(result) as f:
            beyond.append(t1 - t0 - float(json.load(f)["duration"]))
    p.stdin.close()
    p.wait()
    print("per run beyond duration (s):", " ".join(f"{b:.2f}" for b in beyond),
          f"median {sorted(beyond)[len(beyond) // 2]:.2f}")


if __name__ == "__main__":
    main()
