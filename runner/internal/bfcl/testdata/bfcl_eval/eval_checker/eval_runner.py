import json
import os

from bfcl_eval.constants.eval_config import PROJECT_ROOT, RESULT_PATH, SCORE_PATH
from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING
from bfcl_eval.utils import (
    extract_test_category,
    get_directory_structure_by_category,
    load_dataset_entry,
    load_file,
    parse_test_category_argument,
    write_list_of_dicts_to_file,
)


def _correct(config, entry, result):
    if "multi_turn" in entry["id"]:
        result = result[0] if isinstance(result, list) and result else result
    if not isinstance(result, list) or len(result) != 1:
        return False
    (name, args), = result[0].items()
    want = entry["function"][0]["name"]
    if config.underscore_to_dot:
        want = want.replace(".", "_")
    index = int(entry["id"].rsplit("_", 1)[1])
    try:
        return name == want and json.loads(args) == {"x": index}
    except ValueError:
        return False


def _evaluate(config, model_name, category, results, score_dir, partial_eval):
    if os.getenv("BFCL_STANDIN_NO_SCORE") == category:
        return
    prompts = load_dataset_entry(category)
    if not partial_eval and len(results) != len(prompts):
        raise ValueError(
            f"Length of model result ({len(results)}) does not match length of test entries ({len(prompts)}). "
            "If you intended to run only on a subset (eg. entries present in the model result), please pass the `--partial-eval` flag."
        )
    by_id = {e["id"]: e for e in prompts}
    wrong = [r for r in results if not _correct(config, by_id[r["id"]], r["result"])]
    correct = len(results) - len(wrong)
    header = {"accuracy": correct / len(results), "correct_count": correct, "total_count": len(results)}
    write_list_of_dicts_to_file(
        f"BFCL_v4_{category}_score.json", [header] + wrong,
        score_dir / model_name / get_directory_structure_by_category(category),
    )


def main(model, test_categories, result_dir, score_dir, partial_eval=False):
    result_dir = RESULT_PATH if result_dir is None else (PROJECT_ROOT / result_dir).resolve()
    score_dir = SCORE_PATH if score_dir is None else (PROJECT_ROOT / score_dir).resolve()
    categories = parse_test_category_argument(test_categories)
    names = []
    for name in model:
        if name not in MODEL_CONFIG_MAPPING:
            raise ValueError(f"Invalid model name '{name}'.")
        names.append(name.replace("/", "_"))
    for sub in result_dir.iterdir():
        if not sub.is_dir() or sub.name not in names:
            continue
        config = MODEL_CONFIG_MAPPING[sub.name.replace("_", "/")]
        for path in sub.rglob("BFCL_v4_*_result.json"):
            category = extract_test_category(path)
            if category in categories:
                _evaluate(config, sub.name, category, load_file(path), score_dir, partial_eval)
    from bfcl_eval.eval_checker.leaderboard import write_csvs
    write_csvs(score_dir)
