// Package paired tests whether speculative decoding changed a model's
// answers. Greedy speculative decoding should give the same answers as
// decoding without it, so rather than compare two accuracy means (whose
// difference drowns in the sampling noise of the benchmark) it pairs the
// two runs' lm_eval samples question by question (on doc_hash) and applies
// McNemar's exact test to the questions on which exactly one run was right.
//
// The input is what `lm_eval --log_samples` writes:
// samples_<task>_<date>.jsonl, one JSON object per document per filter,
// with doc_id, doc_hash, filter, metrics (the metric names) and each
// metric's value, e.g. "exact_match": 1.0.
package paired
