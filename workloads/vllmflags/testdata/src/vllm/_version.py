__version__: str
__version__ = version = '9.9.9'
