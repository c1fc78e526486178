"""Writes stand-in lm_eval --log_samples files for the paired tests.

Each line has the keys and encoding lm-eval's evaluator and
EvaluationTracker.save_results_samples write (json.dumps, ensure_ascii
False; hashes are sha256 hex of the doc dumped with indent=2, of the
prompt and of str(target)); one line per doc per filter, filters outer.
Run: python3 gen.py (from this directory).
"""
import hashlib
import json
import os

FILTERS = ["strict-match", "flexible-extract"]
GEN = {"until": ["Question:", "</s>", "<|im_end|>"], "do_sample": False, "temperature": 0.0}


def h(s):
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


def docs(n):
    out = []
    for i in range(n):
        a, b = 3 + i, 7 + 2 * i
        out.append({"question": f"Tom has {a} apples and buys {b} more. How many apples has he now?",
                    "answer": f"He has {a} + {b} = <<{a}+{b}={a+b}>>{a+b} apples.\n#### {a+b}"})
    return out


def write(path, doc_list, correct):
    """correct[i] says whether doc i was answered right."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for flt in FILTERS:
            for i, doc in doc_list:
                target = doc["answer"]
                truth = target.split("#### ")[-1]
                ans = truth if correct[i] else str(int(truth) + 1)
                prompt = "Question: " + doc["question"] + "\nAnswer:"
                resp = f" {doc['question'].split()[2]} plus more makes {ans}.\n#### {ans}"
                sample = {
                    "doc_id": i,
                    "doc": doc,
                    "target": target,
                    "arguments": {"gen_args_0": {"arg_0": prompt, "arg_1": GEN}},
                    "resps": [[resp]],
                    "filtered_resps": [ans],
                    "filter": flt,
                    "metrics": ["exact_match"],
                    "doc_hash": h(json.dumps(doc, indent=2, ensure_ascii=False)),
                    "prompt_hash": h(prompt),
                    "target_hash": h(str(target)),
                    "exact_match": 1.0 if correct[i] else 0.0,
                }
                f.write(json.dumps(sample, ensure_ascii=False) + "\n")


N = 100
all_docs = list(enumerate(docs(N + 1)))
base = {i: i % 4 != 0 for i in range(N + 1)}  # 75 of 100 right

write("nospec/samples_gsm8k_2026-08-20T01-00-00.000001.jsonl", all_docs[:N], {i: True for i in range(N + 1)})
write("nospec/samples_gsm8k_2026-08-21T01-00-00.000001.jsonl", all_docs[:N], base)
write("nospec/samples_gsm8k_cot_2026-08-22T01-00-00.000001.jsonl", all_docs[:3], base)

write("spec-identical/samples_gsm8k_2026-08-21T02-00-00.000001.jsonl", all_docs[:N], base)

# Three right answers turn wrong, two wrong ones right; docs 98 and 99
# are missing and doc 100 is extra.
flips = dict(base)
for i in (1, 2, 3):
    flips[i] = False
for i in (0, 4):
    flips[i] = True
write("spec-flips/samples_gsm8k_2026-08-21T02-00-00.000001.jsonl", all_docs[:98] + all_docs[N:], flips)

# Twelve right answers turn wrong, one wrong one right.
drop = dict(base)
for i in (1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15):
    drop[i] = False
drop[8] = True
write("spec-drop/samples_gsm8k_2026-08-21T02-00-00.000001.jsonl", all_docs[:N], drop)
