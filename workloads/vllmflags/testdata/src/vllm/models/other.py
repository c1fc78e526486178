# A model's own class of the same name: not the config the parser uses.
class CacheConfig:
    enable_prefix_caching: int = 0
    enable_mirror: int = 0
