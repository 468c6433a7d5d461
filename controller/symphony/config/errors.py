"""The config's one error type (its own module: schema.py and topology.py both raise it)."""

from __future__ import annotations


class ConfigError(ValueError):
    """A config value that the daemon refuses; ``field`` is its path in the file."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"config error: {field_path}: {message}")
        self.field = field_path
