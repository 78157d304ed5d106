"""The harness version recorded in every summary."""

__version__ = "0.1.0"
