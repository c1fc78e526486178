"""Stand-in vllm package: only the bench entry point (vllm.benchmarks.serve)."""
__version__ = "0.0.0+standin"
