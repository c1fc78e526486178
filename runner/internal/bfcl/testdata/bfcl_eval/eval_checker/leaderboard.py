"""The score CSVs, laid out as bfcl-eval writes them: BFCL's headers, a row
per model named by its display name, percentages with two decimals, N/A for
a category not evaluated."""

import json

from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING
from bfcl_eval.utils import extract_test_category

NA = "N/A"


def _score(table, category):
    if category in table:
        s = dict(table[category])
        s["display"] = s["accuracy"]
        return s
    return {"accuracy": 0, "total_count": 0, "display": NA}


def _unweighted(parts, na_if_missing=True):
    acc = sum(p["accuracy"] for p in parts) / len(parts)
    missing = any(p["display"] == NA for p in parts)
    return {"accuracy": acc, "total_count": sum(p["total_count"] for p in parts),
            "display": NA if missing and na_if_missing else acc}


def _weighted(parts, na_if_missing=True):
    total = sum(p["total_count"] for p in parts)
    acc = sum(p["accuracy"] * p["total_count"] for p in parts) / total if total else 0
    missing = any(p["display"] == NA for p in parts)
    return {"accuracy": acc, "total_count": total, "display": NA if missing and na_if_missing else acc}


def _cell(v):
    return v if isinstance(v, str) else "{:.2f}%".format(v * 100)


def _write(path, header, rows):
    lines = [",".join(header)] + [",".join(_cell(v) for v in row) for row in rows]
    path.write_text("\n".join(lines))


def write_csvs(score_dir):
    tables = {}
    for sub in score_dir.iterdir():
        if sub.is_dir():
            for path in sub.rglob("BFCL_v4_*_score.json"):
                with open(path) as f:
                    tables.setdefault(sub.name, {})[extract_test_category(path)] = json.loads(f.readline())
    non_live, live, multi, agentic, overall = [], [], [], [], []
    for i, (name, t) in enumerate(sorted(tables.items())):
        config = MODEL_CONFIG_MAPPING[name.replace("_", "/")]
        rank, disp = str(i + 1), config.display_name
        s = {c: _score(t, c) for c in (
            "simple_python", "simple_java", "simple_javascript", "multiple", "parallel", "parallel_multiple",
            "irrelevance", "live_simple", "live_multiple", "live_parallel", "live_parallel_multiple",
            "live_irrelevance", "live_relevance", "multi_turn_base", "multi_turn_miss_func",
            "multi_turn_miss_param", "multi_turn_long_context", "web_search_base", "web_search_no_snippet",
            "memory_kv", "memory_vector", "memory_rec_sum")}
        simple = _unweighted([s["simple_python"], s["simple_java"], s["simple_javascript"]])
        ast = [simple, s["multiple"], s["parallel"], s["parallel_multiple"]]
        nl_all = _unweighted(ast, na_if_missing=False)
        non_live.append([rank, disp, nl_all["display"], _unweighted(ast)["display"], simple["display"],
                         s["simple_python"]["display"], s["simple_java"]["display"], s["simple_javascript"]["display"],
                         s["multiple"]["display"], s["parallel"]["display"], s["parallel_multiple"]["display"],
                         s["irrelevance"]["display"]])
        live_ast = [s["live_simple"], s["live_multiple"], s["live_parallel"], s["live_parallel_multiple"]]
        l_all = _weighted(live_ast, na_if_missing=False)
        live.append([rank, disp, l_all["display"], _weighted(live_ast)["display"]] + [p["display"] for p in live_ast]
                    + [s["live_irrelevance"]["display"], s["live_relevance"]["display"]])
        mt = [s["multi_turn_base"], s["multi_turn_miss_func"], s["multi_turn_miss_param"], s["multi_turn_long_context"]]
        mt_all = _unweighted(mt, na_if_missing=False)
        multi.append([rank, disp, mt_all["display"]] + [p["display"] for p in mt])
        web = _unweighted([s["web_search_base"], s["web_search_no_snippet"]])
        mem = _unweighted([s["memory_kv"], s["memory_vector"], s["memory_rec_sum"]])
        ag_all = _unweighted([web, mem], na_if_missing=False)
        agentic.append([rank, disp, ag_all["display"], web["display"], s["web_search_base"]["display"],
                        s["web_search_no_snippet"]["display"], mem["display"], s["memory_kv"]["display"],
                        s["memory_vector"]["display"], s["memory_rec_sum"]["display"]])
        irrelevance = _unweighted([s["irrelevance"], s["live_irrelevance"]])
        parts = [nl_all, l_all, irrelevance, mt_all, ag_all]
        weights = [10, 10, 10, 30, 40]
        total = sum(p["accuracy"] * w for p, w in zip(parts, weights)) / sum(weights)
        overall.append([rank, total, disp, config.url, NA, NA, NA, NA,
                        _unweighted(ast)["display"], simple["display"], s["multiple"]["display"],
                        s["parallel"]["display"], s["parallel_multiple"]["display"],
                        l_all["display"]] + [p["display"] for p in live_ast] + [mt_all["display"]]
                       + [p["display"] for p in mt] + [web["display"], s["web_search_base"]["display"],
                       s["web_search_no_snippet"]["display"], mem["display"], s["memory_kv"]["display"],
                       s["memory_vector"]["display"], s["memory_rec_sum"]["display"],
                       s["live_relevance"]["display"], irrelevance["display"], NA, NA, config.org, config.license])
    _write(score_dir / "data_non_live.csv", ["Rank", "Model", "Non-Live Overall Acc", "AST Summary", "Simple AST",
           "Python Simple AST", "Java Simple AST", "JavaScript Simple AST", "Multiple AST", "Parallel AST",
           "Parallel Multiple AST", "Irrelevance Detection"], non_live)
    _write(score_dir / "data_live.csv", ["Rank", "Model", "Live Overall Acc", "AST Summary", "Python Simple AST",
           "Python Multiple AST", "Python Parallel AST", "Python Parallel Multiple AST", "Irrelevance Detection",
           "Relevance Detection"], live)
    _write(score_dir / "data_multi_turn.csv", ["Rank", "Model", "Multi Turn Overall Acc", "Base", "Miss Func",
           "Miss Param", "Long Context"], multi)
    _write(score_dir / "data_agentic.csv", ["Rank", "Model", "Agentic Overall Acc", "Web Search Summary",
           "Web Search Base", "Web Search No Snippet", "Memory Summary", "Memory KV", "Memory Vector",
           "Memory Recursive Summarization"], agentic)
    _write(score_dir / "data_overall.csv", ["Rank", "Overall Acc", "Model", "Model Link", "Total Cost ($)",
           "Latency Mean (s)", "Latency Standard Deviation (s)", "Latency 95th Percentile (s)", "Non-Live AST Acc",
           "Non-Live Simple AST", "Non-Live Multiple AST", "Non-Live Parallel AST", "Non-Live Parallel Multiple AST",
           "Live Acc", "Live Simple AST", "Live Multiple AST", "Live Parallel AST", "Live Parallel Multiple AST",
           "Multi Turn Acc", "Multi Turn Base", "Multi Turn Miss Func", "Multi Turn Miss Param",
           "Multi Turn Long Context", "Web Search Acc", "Web Search Base", "Web Search No Snippet", "Memory Acc",
           "Memory KV", "Memory Vector", "Memory Recursive Summarization", "Relevance Detection",
           "Irrelevance Detection", "Format Sensitivity Max Delta", "Format Sensitivity Standard Deviation",
           "Organization", "License"], overall)
