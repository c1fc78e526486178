from dataclasses import dataclass


@dataclass
class ModelConfig:
    tokenizer: str = ""
    trust_remote_code: bool = False
    tensor_parallel_size: int = 1


@dataclass
class CacheConfig:
    enable_prefix_caching: bool | None = None
    enable_mirror: bool = False


@dataclass
class LoggingConfig:
    level: str = "info"


@dataclass
class VllmConfig:
    logging_config: LoggingConfig | None = None
