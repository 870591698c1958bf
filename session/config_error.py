"""The config file's one error type, in a module of its own: every start imports it (session/config.py), while the
schema that raises it most (session/schema.py, msgspec's Structs) loads only when a config file exists."""

from __future__ import annotations


class ConfigError(ValueError):
    """One line: the key, the value found, what is allowed."""
