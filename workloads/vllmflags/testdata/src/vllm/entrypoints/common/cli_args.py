# A stand-in for vLLM's server parser: each flag's comment says what the
# generator must make of it.
from dataclasses import dataclass
from typing import ClassVar

from vllm.engine.arg_utils import AsyncEngineArgs, get_kwargs


@dataclass
class BaseFrontendArgs:
    lora_modules: list[str] | None = None  # --lora-modules
    enable_auto_tool_choice: bool = False  # and --no-enable-auto-tool-choice
    registry: ClassVar[dict] = {}  # not a field: no flag

    @classmethod
    def _customize_cli_kwargs(cls, frontend_kwargs):
        frontend_kwargs["lora_modules"]["type"] = str
        return frontend_kwargs

    @classmethod
    def add_cli_args(cls, parser):
        frontend_kwargs = get_kwargs(cls)
        frontend_kwargs = cls._customize_cli_kwargs(frontend_kwargs)
        for key, value in frontend_kwargs.items():
            extra_flags = value.pop("flags", [])
            parser.add_argument(*extra_flags, f"--{key.replace('_', '-')}", **value)
        return parser


@dataclass
class FrontendArgs(BaseFrontendArgs):
    port: int = 8000  # --port
    enable_ssl_refresh: bool = False  # action replaced: no --no-
    chat_template_kwargs: "bool | None" = None  # quoted: and --no-
    tokens_only: bool | str | None = None  # optional value: no --no-
    dropped: int = 0  # deleted below: no flag
    aliased: str = ""  # and its extra long flag --alias

    @classmethod
    def _customize_cli_kwargs(cls, frontend_kwargs):
        frontend_kwargs = super()._customize_cli_kwargs(frontend_kwargs)
        frontend_kwargs["enable_ssl_refresh"]["action"] = "store_true"
        del frontend_kwargs["dropped"]
        frontend_kwargs["aliased"]["flags"] = ["-a", "--alias"]
        return frontend_kwargs


def make_arg_parser(parser):
    parser.add_argument("model_tag", nargs="?")  # positional: no flag
    parser.add_argument("--headless", action="store_true")
    parser.add_argument("--api-server-count", "-asc", type=int)  # no -asc
    parser = FrontendArgs.add_cli_args(parser)
    parser = AsyncEngineArgs.add_cli_args(parser)
    return parser
