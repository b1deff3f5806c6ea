"""The package version, importable from any layer."""

__version__ = "0.1.0"
