import json
import os
from concurrent.futures import ThreadPoolExecutor

from bfcl_eval.constants.eval_config import PROJECT_ROOT, RESULT_PATH, TEST_IDS_TO_GENERATE_PATH
from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING
from bfcl_eval.utils import (
    get_directory_structure_by_category,
    load_dataset_entry,
    load_test_entries_from_id_file,
    parse_test_category_argument,
    sort_key,
    write_list_of_dicts_to_file,
)


def main(args):
    if args.run_ids:
        categories, entries = load_test_entries_from_id_file(TEST_IDS_TO_GENERATE_PATH)
    else:
        categories = parse_test_category_argument(args.test_category)
        entries = [e for c in categories for e in load_dataset_entry(c)]
    for name in args.model:
        if name not in MODEL_CONFIG_MAPPING:
            raise ValueError(f"Unknown model_name '{name}'.")
    result_dir = PROJECT_ROOT / args.result_dir if args.result_dir is not None else RESULT_PATH
    for name in args.model:
        config = MODEL_CONFIG_MAPPING[name]
        handler = config.model_handler(
            model_name=config.model_name, temperature=args.temperature,
            registry_name=name, is_fc_model=config.is_fc_model,
        )
        threads = args.num_threads if args.num_threads is not None else 1

        def one(entry):
            try:
                result, meta = handler.inference(entry, args.include_input_log, args.exclude_state_log)
            except Exception as e:
                result, meta = f"Error during inference: {e}", {}
            return {"id": entry["id"], "result": result, **meta}

        with ThreadPoolExecutor(max_workers=threads) as pool:
            results = list(pool.map(one, sorted(entries, key=sort_key)))
        model_dir = result_dir / name.replace("/", "_")
        for c in categories:
            rows = [r for r in results if r["id"].rsplit("_", 1)[0] == c]
            write_list_of_dicts_to_file(
                f"BFCL_v4_{c}_result.json", rows, model_dir / get_directory_structure_by_category(c)
            )
