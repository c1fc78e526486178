// Package results reads the files written by the benchmark tools the runner
// drives: the result JSON of `vllm bench serve --save-result` and the
// aggregated results file of lm-evaluation-harness.
//
// Both tools evolve quickly, so the parsers are tolerant: a small core of keys
// is typed and required, everything else is optional and kept losslessly
// (BenchResult.Raw, LMEvalResult.Raw) so that newer keys survive a round trip.
//
// Python's json module writes NaN and ±Infinity as bare tokens, which are not
// JSON; both parsers read them as null.
package results
