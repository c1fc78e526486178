"""generate and evaluate with the parameters of bfcl-eval's Typer commands.

Called as plain functions, Typer commands see their declared defaults as
option objects, so every parameter must be passed; _Option stands for that.
"""

import os
from types import SimpleNamespace

from bfcl_eval._llm_response_generation import main as generation_main
from bfcl_eval.constants.eval_config import RESULT_PATH
from bfcl_eval.eval_checker.eval_runner import main as evaluation_main


class _Option:
    def __init__(self, default):
        self.default = default


def _given(**params):
    missing = [k for k, v in params.items() if isinstance(v, _Option)]
    if missing:
        raise TypeError(f"left at their Typer option defaults: {', '.join(missing)}")


def generate(
    model=_Option(["gorilla-openfunctions-v2"]),
    test_category=_Option(["all"]),
    temperature=_Option(0.001),
    include_input_log=_Option(False),
    exclude_state_log=_Option(False),
    num_gpus=_Option(1),
    num_threads=_Option(None),
    gpu_memory_utilization=_Option(0.9),
    backend=_Option("sglang"),
    skip_server_setup=_Option(False),
    local_model_path=_Option(None),
    result_dir=_Option(RESULT_PATH),
    allow_overwrite=_Option(False),
    run_ids=_Option(False),
    enable_lora=_Option(False),
    max_lora_rank=_Option(None),
    lora_modules=_Option(None),
):
    _given(**locals())
    if os.getenv("BFCL_STANDIN_RAISE") == "generate":
        raise RuntimeError("stand-in generate was told to raise")
    generation_main(SimpleNamespace(
        model=model, test_category=test_category, temperature=temperature,
        include_input_log=include_input_log, exclude_state_log=exclude_state_log,
        num_gpus=num_gpus, num_threads=num_threads, gpu_memory_utilization=gpu_memory_utilization,
        backend=backend, skip_server_setup=skip_server_setup, local_model_path=local_model_path,
        result_dir=result_dir, allow_overwrite=allow_overwrite, run_ids=run_ids,
        enable_lora=enable_lora, max_lora_rank=max_lora_rank, lora_modules=lora_modules,
    ))


def evaluate(
    model=_Option(None),
    test_category=_Option(["all"]),
    result_dir=_Option(None),
    score_dir=_Option(None),
    partial_eval=_Option(False),
):
    _given(**locals())
    if os.getenv("BFCL_STANDIN_RAISE") == "evaluate":
        raise RuntimeError("stand-in evaluate was told to raise")
    evaluation_main(model, test_category, result_dir, score_dir, partial_eval)
