"""The GPU self-test: the runner's night with the real vLLM and lm_eval on
one GPU, and the faults a night must survive, in one table.

On a machine with one GPU, vLLM and lm_eval installed (lm_eval on PATH)
and no network:

    python3 tools/gpu-selftest/selftest.py --runner bin/runner --hub bin/hfhub

It writes a tiny random-weight Llama into its own Hugging Face cache
(served by name, HF_HUB_OFFLINE=1), caches a gsm8k-shaped set through the
loopback Hub stand-in (--hub), and runs `runner run` (B200 profile,
native, tools from PATH) on:

  night-plain    a 2-point sweep x 3 repetitions and gsm8k 5-shot
  night-spec     the same model with n-gram speculative decoding
  bench-cli      the plain sweep, one repetition, each run its own
                 `vllm bench serve` (BENCHKITE_BENCH_DRIVER=off): the
                 driver's result files against the CLI's
  engine-fails   the engine cannot import flashinfer
  server-killed  the API server SIGKILLed during the first bench run
  term-bench     SIGTERM twice, 0.5 s apart, to the job's process group
  term-lmeval    during the bench, during lm_eval, during model load
  term-load

Random weights score 0 on gsm8k: a night's accuracy gate fails, as it
should, and is expected. Each row says what was measured and which checks
failed; the exit status is 1 when any check failed (a harness defect), 2
when the machine lacks what the test needs.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from dataclasses import asdict, dataclass, field
from typing import Dict, List, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = "benchkite-test/tiny-llama"
LEFT_PATTERN = re.compile(r"vllm|EngineCore|lm_eval|benchkite-bench|VLLM")
# Between two bench runs of one job, at most this much time that is not
# the benchmark's own `duration`.
GAP_TARGET_S = 1.5

SERVE_ARGS = """    --tensor-parallel-size 1
    --max-model-len 8192
    --gpu-memory-utilization 0.5"""
LMEVAL = """lm_eval:
  model_args: {tokenized_requests: false, tokenizer_backend: null, timeout: 600}
  tasks:
    - name: gsm8k
      num_fewshot: 5
      model_args: {num_concurrent: 16, max_length: 8192, max_gen_toks: 64}
"""


def recipe(name: str, serve_extra: str = "", bench: str = "", lmeval: bool = True) -> str:
    return (f"# GPU self-test: a tiny random-weight model; the harness is under test.\n"
            f"name: {name}\ngpu: B200\nnum_gpus: 1\nnightly: true\n"
            f"vllm:\n  model: {MODEL}\n  serve_args: >-\n{SERVE_ARGS}\n{serve_extra}"
            + (LMEVAL if lmeval else "") + "vllm_bench:\n  configs:\n" + bench)


SWEEP = """    - name: 512-in-128-out
      backend: openai
      dataset: random
      input_len: 512
      output_len: 128
      num_prompts: [64, 256]
      max_concurrency: [8, 64]
      repetitions: {reps}
"""
SPEC_SERVE = """    --speculative-config.method ngram
    --speculative-config.num_speculative_tokens 3
    --speculative-config.prompt_lookup_max 4
    --speculative-config.prompt_lookup_min 2
"""
SPEC_BENCH = """    - name: 512-in-128-out-conc-16
      backend: openai-chat
      dataset: random
      input_len: 512
      output_len: 128
      num_prompts: 128
      max_concurrency: 16
"""
# Faults: one slow-enough run, then lm_eval.
FAULT_BENCH = """    - name: 512-in-512-out
      backend: openai
      dataset: random
      input_len: 512
      output_len: 512
      num_prompts: 512
      max_concurrency: 8
"""


@dataclass
class Scenario:
    name: str
    recipe: str
    what: str
    # Expected outcome: the run's verdict and exit status.
    verdict: str
    exit: Optional[int]
    env: Dict[str, str] = field(default_factory=dict)
    args: List[str] = field(default_factory=list)
    # A fault: wait for this log line, then AFTER seconds, then act.
    wait_for: str = ""
    after: float = 0.0
    action: str = ""  # "term2" or "kill-server"
    timeout: float = 480.0


def scenarios() -> List[Scenario]:
    plain = recipe("selftest_plain-b200", bench=SWEEP.format(reps=3))
    fault = recipe("selftest_fault-b200", bench=FAULT_BENCH)
    return [
        Scenario("night-plain", plain, "2 points x 3 reps + gsm8k", "fail", 1),
        Scenario("night-spec", recipe("selftest_spec-b200", serve_extra=SPEC_SERVE, bench=SPEC_BENCH),
                 "n-gram spec decode + gsm8k", "fail", 1),
        Scenario("bench-cli", recipe("selftest_cli-b200", bench=SWEEP.format(reps=1), lmeval=False),
                 "2 points, each its own CLI", "pass", 0, env={"BENCHKITE_BENCH_DRIVER": "off"},
                 args=["--bench-only"]),
        Scenario("engine-fails", fault, "no flashinfer in the engine", "error", None, env={"SELFTEST_NO_FLASHINFER": "1"},
                 timeout=300),
        Scenario("server-killed", fault, "SIGKILL API server mid-bench", "error", None,
                 wait_for="Starting main benchmark run", after=2, action="kill-server", timeout=300),
        Scenario("term-bench", fault, "SIGTERM x2 during the bench", "error", 143,
                 wait_for="Starting main benchmark run", after=2, action="term2", timeout=300),
        Scenario("term-lmeval", recipe("selftest_fault_lm-b200", bench=SPEC_BENCH), "SIGTERM x2 during lm_eval", "error", 143,
                 wait_for="lm_eval --model local", after=4, action="term2", timeout=300),
        Scenario("term-load", fault, "SIGTERM x2 during model load", "error", 143,
                 wait_for="Loading model from scratch", after=0.5, action="term2", timeout=300),
    ]


@dataclass
class Row:
    scenario: str
    what: str
    verdict: str = ""
    exit: Optional[int] = None
    headline: str = ""
    first_failure: str = ""
    cause: str = ""
    failure_class: str = ""
    seconds: float = 0.0
    ready_s: Optional[float] = None
    bench_phase_s: Optional[float] = None
    bench_duration_s: Optional[float] = None
    bench_runs: int = 0
    max_between_s: Optional[float] = None
    procs_left: int = 0
    left: List[str] = field(default_factory=list)
    gpu_mib_before: Optional[int] = None
    gpu_mib_after: Optional[int] = None
    failed: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)


# ---- what the machine has ----------------------------------------------

def gpu_mib() -> Optional[int]:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=30).stdout
        return sum(int(x) for x in out.split())
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def gpu_name() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
    except OSError:
        return ""


def leftovers(exclude: int) -> List[str]:
    """Live processes of vLLM, lm_eval or the bench driver: after a run,
    there should be none."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) in (exclude, os.getpid()):
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cmd and state != "Z" and LEFT_PATTERN.search(cmd) and "selftest.py" not in cmd:
            out.append(f"{pid}: {cmd[:120]}")
    return out


# ---- one run -------------------------------------------------------------

def descendants(root: int) -> Dict[int, str]:
    """pid: cmdline of every live descendant of root."""
    parent: Dict[int, int] = {}
    cmds: Dict[int, str] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmds[int(pid)] = f.read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError, IndexError):
            continue
        parent[int(pid)] = ppid
    out = {}
    for pid in parent:
        p = pid
        while p in parent and p != root and p > 1:
            p = parent[p]
        if p == root and pid != root:
            out[pid] = cmds.get(pid, "")
    return out


def run_scenario(sc: Scenario, a: argparse.Namespace, env: Dict[str, str], out_logs: str) -> Row:
    row = Row(sc.name, sc.what)
    wd = os.path.join(a.work, "runs", sc.name)
    shutil.rmtree(wd, ignore_errors=True)
    os.makedirs(os.path.join(wd, "agents"))
    with open(os.path.join(wd, "agents", "profiles.yaml"), "w") as f:
        f.write(profiles(a.hf_home))
    with open(os.path.join(wd, "recipe.yaml"), "w") as f:
        f.write(sc.recipe)
    e = dict(env)
    e.update(sc.env)
    if e.pop("SELFTEST_NO_FLASHINFER", ""):
        shadow = os.path.join(wd, "no-flashinfer")
        os.makedirs(os.path.join(shadow, "flashinfer"))
        with open(os.path.join(shadow, "flashinfer", "__init__.py"), "w") as f:
            f.write("raise ModuleNotFoundError(\"No module named 'flashinfer'\", name='flashinfer')\n")
        e["PYTHONPATH"] = shadow + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    row.gpu_mib_before = gpu_mib()
    log_path = os.path.join(out_logs, sc.name + ".log")
    start = time.monotonic()
    with open(log_path, "w") as log:
        p = subprocess.Popen([a.runner, "run", "recipe.yaml", "--health-timeout", "6m", *sc.args],
                             cwd=wd, env=e, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    acted = None
    if sc.action:
        acted = act(sc, p, log_path, start, row)
    try:
        p.wait(timeout=max(sc.timeout - (time.monotonic() - start), 1))
    except subprocess.TimeoutExpired:
        row.failed.append(f"runner still running after {sc.timeout:.0f} s")
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
    end = time.monotonic()
    row.exit = p.returncode if p.returncode >= 0 else 128 - p.returncode
    row.seconds = round(end - (acted if acted is not None else start), 1)
    # What a run leaves must be gone once the runner is: give the GPU
    # driver a moment to release the memory of the killed processes.
    deadline = time.monotonic() + 20
    while True:
        row.left = leftovers(p.pid)
        row.gpu_mib_after = gpu_mib()
        settled = not row.left and (row.gpu_mib_after is None or row.gpu_mib_before is None
                                    or row.gpu_mib_after <= row.gpu_mib_before)
        if settled or time.monotonic() > deadline:
            break
        time.sleep(1)
    row.procs_left = len(row.left)
    read_results(row, wd, log_path)
    judge(sc, row, acted is not None or not sc.action)
    return row


def act(sc: Scenario, p: "subprocess.Popen[bytes]", log_path: str, start: float, row: Row) -> Optional[float]:
    """Wait for sc.wait_for in the run's log (or its results' logs), then
    do sc.action; returns when it acted."""
    deadline = start + sc.timeout
    while time.monotonic() < deadline and p.poll() is None:
        if sc.wait_for in read(log_path):
            break
        time.sleep(0.2)
    else:
        row.failed.append(f"no {sc.wait_for!r} in the log before the runner ended")
        return None
    time.sleep(sc.after)
    if sc.action == "kill-server":
        servers = [pid for pid, cmd in descendants(p.pid).items() if re.search(r"\bvllm serve ", cmd)]
        if not servers:
            row.failed.append("no vllm serve process to kill")
            return None
        os.kill(min(servers), signal.SIGKILL)
        row.notes.append(f"SIGKILL to vllm serve pid {min(servers)}")
    else:
        first = time.monotonic()
        os.killpg(p.pid, signal.SIGTERM)
        time.sleep(0.5)
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        return first  # seconds count from the first signal
    return time.monotonic()


def read(path: str) -> str:
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


RUN_LINE = re.compile(r"^\$ vllm bench serve .*--result-filename (\S+)", re.M)
TOOK = re.compile(r"^runner: bench run took ([0-9.]+) s (in the bench driver|as `vllm bench serve`)"
                  r"(?:, started ([0-9.]+) s after the previous run ended)?", re.M)


def bench_timing(log: str, durations: Dict[str, float]) -> Tuple[List[float], List[str]]:
    """Per bench run, its time that is not the benchmark's `duration`: the
    run's wall time less its duration, plus the wait since the previous
    run ended. Pairs each `$ vllm bench serve` line with the next
    `bench run took` line."""
    files = [m.group(1) for m in RUN_LINE.finditer(log)]
    took = TOOK.findall(log)
    between, how = [], []
    for f, (wall, path, gap) in zip(files, took):
        d = durations.get(os.path.basename(f))
        if d is None:
            continue
        between.append(float(wall) - d + (float(gap) if gap else 0.0))
        how.append(path)
    return between, how


def parse_time(s: str) -> float:
    from datetime import datetime
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()


def read_results(row: Row, wd: str, log_path: str) -> None:
    log = read(log_path)
    lines = log.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("+++ "):
            row.headline = line[4:]
            row.first_failure = lines[i + 1].strip() if i + 1 < len(lines) and lines[i + 1].startswith("  ") else ""
    results = os.path.join(wd, "results")
    names = os.listdir(results) if os.path.isdir(results) else []
    names = [n for n in names if ".old-" not in n]
    if not names:
        row.notes.append("no results directory")
        return
    rdir = os.path.join(results, names[0])
    try:
        with open(os.path.join(rdir, "summary.json")) as f:
            s = json.load(f)
    except (OSError, ValueError) as err:
        row.notes.append(f"no summary.json: {err}")
        return
    row.verdict = s.get("verdict", "")
    failure = s.get("failure") or {}
    phases = {p["name"]: p for p in s.get("phases", [])}
    bad = [p for p in s.get("phases", []) if p.get("status") not in ("ok", "skipped")]
    row.failure_class = failure.get("class", "")
    row.cause = failure.get("line") or next((p.get("cause") or p.get("error", "") for p in bad), "")
    for name, p in phases.items():
        if p.get("started") and p.get("finished"):
            secs = parse_time(p["finished"]) - parse_time(p["started"])
            if name == "ready":
                row.ready_s = round(secs, 1)
            if name == "bench" and p.get("status") == "ok":
                row.bench_phase_s = round(secs, 2)
    durations: Dict[str, float] = {}
    bdir = os.path.join(rdir, "bench")
    for fn in sorted(os.listdir(bdir)) if os.path.isdir(bdir) else []:
        try:
            with open(os.path.join(bdir, fn)) as f:
                durations[fn] = float(json.load(f)["duration"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    if row.bench_phase_s is not None and durations:
        row.bench_duration_s = round(sum(durations.values()), 2)
        row.bench_runs = len(durations)
        between, how = bench_timing(log, durations)
        if between:
            row.max_between_s = round(max(between), 2)
            row.notes.append("bench runs " + ", ".join(sorted(set(how))) + "; per run " +
                             " ".join(f"{b:.2f}" for b in between) + " s beyond duration")


# ---- what each row must show --------------------------------------------

def judge(sc: Scenario, row: Row, acted: bool) -> None:
    f = row.failed
    if not acted:
        return
    if row.verdict != sc.verdict:
        f.append(f"verdict {row.verdict or 'none'}, want {sc.verdict}")
    if sc.exit is not None and row.exit != sc.exit:
        f.append(f"exit {row.exit}, want {sc.exit}")
    if sc.exit is None and row.exit == 0:
        f.append("exit 0 for a failed run")
    if row.procs_left:
        f.append(f"{row.procs_left} process(es) left")
    if row.gpu_mib_before is not None and row.gpu_mib_after is not None and row.gpu_mib_after > row.gpu_mib_before:
        f.append(f"GPU memory {row.gpu_mib_after} MiB after, {row.gpu_mib_before} before")
    if sc.action == "term2" and row.seconds > 15:
        f.append(f"runner took {row.seconds} s to end after the cancel")
    if sc.name.startswith("night") or sc.name == "bench-cli":
        if row.bench_phase_s is None:
            f.append("bench phase not ok")
        if sc.name.startswith("night") and row.failure_class != "accuracy":
            f.append(f"red for something else than accuracy (class {row.failure_class or 'none'}): {row.cause[:80]!r}")
        if sc.name.startswith("night") and (row.max_between_s is None or row.max_between_s > GAP_TARGET_S):
            f.append(f"bench runs {row.max_between_s} s apart beyond their duration, target <= {GAP_TARGET_S}")
    # The causes people read (the three the real logs showed wrong).
    if sc.name == "engine-fails" and "flashinfer" not in row.cause:
        f.append("cause is not the EngineCore's ModuleNotFoundError")
    if sc.name == "server-killed":
        if "c10d" in row.cause or "hostname" in row.cause:
            f.append("cause is vLLM's c10d warning")
        if "server" not in row.first_failure:
            f.append("failure list does not lead with the server's death")
    if sc.action == "term2" and "cancel" not in row.headline:
        f.append("headline does not say canceled")


def compare_cli(rows: Dict[str, Row], work: str) -> List[str]:
    """The bench driver's result files (night-plain) against the CLI's
    (bench-cli): the same keys, comparable throughput."""
    def files(scenario: str) -> Dict[str, Dict[str, object]]:
        out = {}
        base = os.path.join(work, "runs", scenario, "results")
        for name in os.listdir(base) if os.path.isdir(base) else []:
            bdir = os.path.join(base, name, "bench")
            for fn in os.listdir(bdir) if os.path.isdir(bdir) else []:
                with open(os.path.join(bdir, fn)) as fh:
                    out[fn] = json.load(fh)
        return out
    drv, cli = files("night-plain"), files("bench-cli")
    if not drv or not cli:
        return []
    notes, failed = [], []
    for conc in ("conc-8", "conc-64"):
        d = [v for k, v in drv.items() if conc in k]
        c = [v for k, v in cli.items() if conc in k]
        if not d or not c:
            failed.append(f"{conc}: no result to compare")
            continue
        if sorted(d[0]) != sorted(c[0]):
            failed.append(f"{conc}: keys differ: driver-only {sorted(set(d[0]) - set(c[0]))}, CLI-only {sorted(set(c[0]) - set(d[0]))}")
        tp = sorted(float(x["output_throughput"]) for x in d)[len(d) // 2]
        ratio = tp / float(c[0]["output_throughput"])
        notes.append(f"{conc}: driver/CLI output throughput {ratio:.3f}, same {len(d[0])} keys" if sorted(d[0]) == sorted(c[0])
                     else f"{conc}: ratio {ratio:.3f}")
        if not 0.8 <= ratio <= 1.25:
            failed.append(f"{conc}: driver/CLI throughput {ratio:.3f}")
    r = rows["bench-cli"]
    r.notes.extend(notes)
    r.failed.extend(failed)
    return failed


# ---- the table -------------------------------------------------------------

def table(rows: List[Row]) -> str:
    def n(v: Optional[float]) -> str:
        return "" if v is None else f"{v:g}"
    out = ["| scenario | what | verdict (exit) | headline | cause | s | ready s | bench s − Σduration (runs) | max between runs s | procs left | GPU MiB before→after | checks |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        over = ""
        if r.bench_phase_s is not None and r.bench_duration_s is not None:
            over = f"{r.bench_phase_s:.2f} − {r.bench_duration_s:.2f} = {r.bench_phase_s - r.bench_duration_s:.2f} ({r.bench_runs})"
        cells = [r.scenario, r.what, f"{r.verdict} ({r.exit})", short(r.headline, 50), short(r.cause, 90), n(r.seconds),
                 n(r.ready_s), over, n(r.max_between_s), str(r.procs_left),
                 f"{n(r.gpu_mib_before)}→{n(r.gpu_mib_after)}", "ok" if not r.failed else "FAIL: " + "; ".join(r.failed)]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out) + "\n"


def short(s: str, n: int) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"


def profiles(hf_home: str) -> str:
    return (f"# The GPU self-test's one profile: native, its own model cache.\n"
            f"B200:\n  queue: selftest\n  vendor: nvidia\n  image_repo: vllm/vllm-openai\n  runtime: native\n"
            f"  hf_home: {hf_home}\n  env:\n    VLLM_DEEP_GEMM_WARMUP: skip\n")


# ---- set-up ------------------------------------------------------------------

def setup(a: argparse.Namespace, env: Dict[str, str]) -> List[str]:
    """The model and gsm8k in the test's cache; what is missing."""
    problems = []
    snap = os.path.join(a.hf_home, "hub", "models--" + MODEL.replace("/", "--"), "refs", "main")
    if not os.path.exists(snap):
        r = subprocess.run([a.python, os.path.join(HERE, "tinymodel.py"), a.hf_home, MODEL], env=env,
                           capture_output=True, text=True)
        print(r.stdout.strip() or r.stderr.strip()[-2000:], flush=True)
        if r.returncode != 0:
            problems.append("the tiny model could not be written")
    marker = os.path.join(a.hf_home, "selftest-gsm8k-cached")
    if not os.path.exists(marker):
        e = {k: v for k, v in env.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
        r = subprocess.run([a.hub, "-train", "10", "-test", "40", a.python, "-c",
                            "from datasets import load_dataset; print(load_dataset('openai/gsm8k', 'main'))"],
                           env=e, capture_output=True, text=True)
        print((r.stdout + r.stderr).strip()[-600:], flush=True)
        if r.returncode != 0:
            problems.append("gsm8k could not be cached through the Hub stand-in")
        else:
            open(marker, "w").close()
    return problems


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runner", required=True, help="the runner binary")
    ap.add_argument("--hub", required=True, help="the hfhub binary (runner/standins/cmd/hfhub)")
    ap.add_argument("--work", default="/tmp/benchkite-gpu-selftest", help="work directory (kept between invocations)")
    ap.add_argument("--out", default="", help="where the table, rows and logs go (default WORK/out)")
    ap.add_argument("--python", default="python3", help="the Python vLLM is installed in")
    ap.add_argument("--only", default="", help="comma-separated scenarios; the table adds earlier rows of WORK")
    a = ap.parse_args(argv)
    a.runner, a.hub, a.work = os.path.abspath(a.runner), os.path.abspath(a.hub), os.path.abspath(a.work)
    a.out = os.path.abspath(a.out or os.path.join(a.work, "out"))
    a.hf_home = os.path.join(a.work, "hf")
    os.makedirs(a.out, exist_ok=True)
    logs = os.path.join(a.work, "logs")
    rows_dir = os.path.join(a.work, "rows")
    os.makedirs(logs, exist_ok=True)
    os.makedirs(rows_dir, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BUILDKITE", "HF_TOKEN"))}
    env.update(HF_HOME=a.hf_home, HF_HUB_OFFLINE="1", BENCHKITE_TOOLS="path", PYTHONUNBUFFERED="1")

    missing = [t for t in ("nvidia-smi", "lm_eval", "vllm") if shutil.which(t, path=env.get("PATH")) is None]
    version = subprocess.run([a.python, "-c", "import vllm; print(vllm.__version__)"], capture_output=True, text=True)
    if missing or version.returncode != 0:
        print(f"selftest: missing {', '.join(missing) or 'an importable vllm'}", file=sys.stderr)
        return 2
    header = f"vLLM {version.stdout.strip()} on {gpu_name()}"
    print("selftest:", header, flush=True)
    problems = setup(a, env)
    if problems:
        print("selftest: " + "; ".join(problems), file=sys.stderr)
        return 2

    chosen = [s for s in scenarios() if not a.only or s.name in a.only.split(",")]
    if not a.only:
        for fn in os.listdir(rows_dir):
            os.remove(os.path.join(rows_dir, fn))
    for sc in chosen:
        print(f"selftest: {sc.name}: {sc.what}", flush=True)
        row = run_scenario(sc, a, env, logs)
        with open(os.path.join(rows_dir, sc.name + ".json"), "w") as f:
            json.dump(asdict(row), f)
        print(f"selftest: {sc.name}: {row.verdict} ({row.exit}) in {row.seconds} s; "
              + ("ok" if not row.failed else "FAIL: " + "; ".join(row.failed)), flush=True)

    rows: Dict[str, Row] = {}
    for sc in scenarios():
        path = os.path.join(rows_dir, sc.name + ".json")
        if os.path.exists(path):
            with open(path) as f:
                rows[sc.name] = Row(**json.load(f))
    if "bench-cli" in rows and "night-plain" in rows:
        compare_cli(rows, a.work)
    text = f"GPU self-test: {header}\n\n" + table(list(rows.values()))
    for r in rows.values():
        for note in r.notes + r.left:
            text += f"\n- {r.scenario}: {note}"
    print("\n" + text, flush=True)
    with open(os.path.join(a.out, "table.md"), "w") as f:
        f.write(text + "\n")
    with open(os.path.join(a.out, "rows.json"), "w") as f:
        json.dump({"header": header, "rows": [asdict(r) for r in rows.values()]}, f, indent=1)
    with tarfile.open(os.path.join(a.out, "logs.tgz"), "w:gz") as t:
        t.add(logs, arcname="logs")
        for sc in rows:
            res = os.path.join(a.work, "runs", sc, "results")
            if os.path.isdir(res):
                t.add(res, arcname=f"results/{sc}", filter=lambda ti: None if ti.name.endswith(".jsonl") and ti.size > 4 << 20 else ti)
    return 1 if any(r.failed for r in rows.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
