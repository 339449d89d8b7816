"""The one place the library's version is written (read by pyproject.toml and ``meanfield.__version__``)."""

__version__ = "0.2.0.dev0"
