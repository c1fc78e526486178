import json
import os
import re

from bfcl_eval.constants.category_mapping import *
from bfcl_eval.constants.eval_config import *


def extract_test_category(input_string, raise_error=True):
    match = re.search(rf".*{VERSION_PREFIX}_(\w+?)(?:_score|_result)?\.json", str(input_string))
    if match:
        return match.group(1)
    if raise_error:
        raise ValueError(f"Could not extract the test category from the input string: {input_string}")
    return None


def parse_test_category_argument(test_category_args):
    names = set()
    for c in test_category_args:
        if c in TEST_COLLECTION_MAPPING:
            names.update(TEST_COLLECTION_MAPPING[c])
        elif c in ALL_CATEGORIES:
            names.add(c)
        else:
            raise Exception(f"Invalid test category name provided: {c}")
    return sorted(names)


def get_general_grouping(test_id):
    if "format_sensitivity" in test_id:
        return "format_sensitivity"
    if "multi_turn" in test_id:
        return "multi_turn"
    if "web_search" in test_id or "memory" in test_id:
        return "agentic"
    if "live" in test_id:
        return "live"
    return "non_live"


def get_directory_structure_by_category(test_category):
    return get_general_grouping(test_category)


def load_dataset_entry(test_category, include_prereq=True, include_language_specific_hint=True):
    """Made-up entries, in string order of their index so that only
    sort_key puts them in BFCL's order."""
    n = int(os.getenv("BFCL_STANDIN_ENTRIES", "12"))
    out = []
    for i in sorted(range(n), key=str):
        out.append({
            "id": f"{test_category}_{i}",
            "question": [[{"role": "user", "content": f"question {i}"}]],
            "function": [{
                "name": f"pkg.tool_{i % 3}",
                "description": "a tool",
                "parameters": {"type": "dict", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
            }],
        })
    return out


def sort_key(entry):
    entry_id = entry["id"].split(":")[0]
    category, index = entry_id.rsplit("_", 1)
    if "-" in index:
        index = index.split("-")[0]
    if "multi_turn" in category:
        priority = 3
    elif "web_search" in category:
        priority = 1
    elif "memory" in category:
        priority = 4
    else:
        priority = 2
    return (priority, category, int(index))


def load_test_entries_from_id_file(id_file_path):
    with open(id_file_path) as f:
        wanted = json.load(f)
    categories, entries = [], []
    for category, ids in wanted.items():
        if not ids:
            continue
        entries.extend(e for e in load_dataset_entry(category) if e["id"] in ids)
        categories.append(category)
    return categories, entries


def load_file(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_list_of_dicts_to_file(filename, data, subdir=None):
    if subdir:
        os.makedirs(subdir, exist_ok=True)
        filename = os.path.join(subdir, os.path.basename(filename))
    with open(filename, "w", encoding="utf-8") as f:
        for entry in data:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")
