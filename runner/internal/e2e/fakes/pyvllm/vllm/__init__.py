"""Stand-in vllm package: only the bench entry point (vllm.benchmarks.serve)."""
