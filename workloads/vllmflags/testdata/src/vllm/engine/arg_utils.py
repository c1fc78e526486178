import argparse
from dataclasses import dataclass

from vllm.config import CacheConfig, ModelConfig, VllmConfig


def get_kwargs(cls):
    return {}


@dataclass
class EngineArgs:
    @staticmethod
    def add_cli_args(parser):
        model_kwargs = get_kwargs(ModelConfig)
        cache_kwargs = get_kwargs(CacheConfig)
        logging_kwargs = get_kwargs(VllmConfig)["logging_config"]
        group = parser.add_argument_group(title="ModelConfig")
        group.add_argument("--tokenizer", **model_kwargs["tokenizer"])
        group.add_argument("--trust-remote-code", **model_kwargs["trust_remote_code"])
        group.add_argument("--tensor-parallel-size", "-tp", **model_kwargs["tensor_parallel_size"])
        group.add_argument(
            "--enable-prefix-caching",
            **{**cache_kwargs["enable_prefix_caching"], "default": None},
        )
        group.add_argument("--enable-mirror", **{**cache_kwargs["enable_mirror"], "action": "store_true"})
        group.add_argument("--disable-cascade-attn", action=argparse.BooleanOptionalAction, default=None)
        group.add_argument("--logging-config", **logging_kwargs)
        return parser


@dataclass
class AsyncEngineArgs(EngineArgs):
    @staticmethod
    def add_cli_args(parser, async_args_only=False):
        if not async_args_only:
            parser = EngineArgs.add_cli_args(parser)
        parser.add_argument("--enable-log-requests", action=argparse.BooleanOptionalAction)
        return parser
