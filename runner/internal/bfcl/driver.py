"""Run one BFCL category against an already running OpenAI-compatible server.

Written by benchkite's runner next to the results and run as
`python driver.py CONFIG.json`; the runner decides everything and this file
only hands it to bfcl_eval, whose CLI knows only the models it registers.
"""

import json
import os
import sys
import urllib.request


def main(config_path):
    with open(config_path) as f:
        cfg = json.load(f)

    # bfcl_eval reads these when its modules are imported.
    os.environ["OPENAI_BASE_URL"] = cfg["base_url"]
    os.environ["OPENAI_API_KEY"] = cfg["api_key"]
    os.environ["BFCL_PROJECT_ROOT"] = cfg["root"]
    os.environ["LOCAL_SERVER_ENDPOINT"] = cfg["local_server_endpoint"]
    os.environ["LOCAL_SERVER_PORT"] = str(cfg["local_server_port"])

    # The handlers copy MAXIMUM_STEP_LIMIT when imported: set it first.
    if "bfcl_eval.model_handler.base_handler" in sys.modules:
        raise RuntimeError("bfcl_eval handlers were imported before the step limit was set")
    from bfcl_eval.constants import default_prompts

    default_prompts.MAXIMUM_STEP_LIMIT = cfg["maximum_step_limit"]

    from bfcl_eval.__main__ import evaluate, generate
    from bfcl_eval.constants.eval_config import RESULT_PATH, TEST_IDS_TO_GENERATE_PATH
    from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING, ModelConfig
    from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler
    from bfcl_eval.utils import load_dataset_entry, parse_test_category_argument, sort_key

    name = cfg["model"]
    config = ModelConfig(
        model_name=name,
        display_name=name,
        url="",
        org="",
        license="",
        model_handler=OpenAICompletionsHandler,
        input_price=None,
        output_price=None,
        is_fc_model=True,
        underscore_to_dot=True,
    )
    # evaluate looks the model up again by its result folder name with '_'
    # read back as '/', so register that spelling too.
    for key in {name, name.replace("/", "_").replace("_", "/")}:
        MODEL_CONFIG_MAPPING[key] = config

    category = cfg["category"]
    leaves = parse_test_category_argument([category])
    if leaves != cfg["leaves"]:
        raise RuntimeError(f"bfcl_eval expands {category} to {leaves}, the runner to {cfg['leaves']}: is bfcl-eval {cfg['bfcl_version']} installed?")

    quotas = cfg["quotas"]
    if quotas is not None:
        ids = {}
        for leaf in leaves:
            entries = sorted(load_dataset_entry(leaf), key=sort_key)
            ids[leaf] = [e["id"] for e in entries[: quotas[leaf]]]
        with open(TEST_IDS_TO_GENERATE_PATH, "w") as f:
            json.dump(ids, f, indent=2)

    subsampled = quotas is not None
    # Called as functions, Typer commands get no defaults: pass them all.
    generate(
        model=[name],
        test_category=[category],
        temperature=cfg["temperature"],
        include_input_log=False,
        exclude_state_log=False,
        num_gpus=1,
        num_threads=cfg["num_threads"],
        gpu_memory_utilization=0.9,
        backend="sglang",
        skip_server_setup=True,
        local_model_path=None,
        result_dir=RESULT_PATH,
        allow_overwrite=subsampled,
        run_ids=subsampled,
        enable_lora=False,
        max_lora_rank=None,
        lora_modules=None,
    )

    # BFCL records a failed request as the entry's answer and goes on, so
    # a server that died during generate would read as a bad score.
    try:
        with urllib.request.urlopen(cfg["base_url"].rstrip("/") + "/models", timeout=30) as r:
            r.read()
    except Exception as e:
        print(f"bfcl driver: the server stopped answering during generate of {category}: {e}", file=sys.stderr)
        return 3

    evaluate(
        model=[name],
        test_category=[category],
        result_dir=None,
        score_dir=None,
        partial_eval=subsampled,
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: driver.py CONFIG.json", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
