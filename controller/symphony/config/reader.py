"""A generic, typed reader of one TOML table that names the field in every error.

Each error carries the field's path in the file (``switches[1].routes[0].prefix``), so the
operator can find it without reading code.
"""

from __future__ import annotations

import ipaddress
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from symphony.config.addresses import split_host_port
from symphony.config.schema import ConfigError
from symphony.sizes import NAME_RE

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def read_toml(path: Path) -> Mapping[str, Any]:
    """The decoded file; ConfigError when it cannot be read or is not TOML."""
    try:
        return tomllib.loads(path.read_text())
    except OSError as exc:
        raise ConfigError("<file>", f"cannot read {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("<file>", f"{path} is not valid TOML: {exc}") from exc


class TableReader:
    """Typed access to one TOML table, remembering its path for error messages."""

    def __init__(self, raw: Any, prefix: str, base_dir: Path) -> None:
        if not isinstance(raw, Mapping):
            raise ConfigError(prefix or "<file>", "must be a table")
        self.raw = raw
        self.prefix = prefix
        self.base_dir = base_dir

    def at(self, key: str) -> str:
        return f"{self.prefix}.{key}" if self.prefix else key

    def only_keys(self, *keys: str) -> None:
        for k in self.raw:
            if k not in keys:
                raise ConfigError(self.at(k), f"unknown key (known: {', '.join(keys)})")

    def _get(self, key: str, default: Any, required: bool) -> Any:
        if key in self.raw:
            return self.raw[key]
        if required:
            raise ConfigError(self.at(key), "is required")
        return default

    def table(self, key: str) -> TableReader:
        return TableReader(self.raw.get(key, {}), self.at(key), self.base_dir)

    def array(self, key: str, required: bool = False) -> list[TableReader]:
        value = self._get(key, [], required)
        if not isinstance(value, list):
            raise ConfigError(self.at(key), "must be an array of tables")
        return [TableReader(v, f"{self.at(key)}[{i}]", self.base_dir) for i, v in enumerate(value)]

    def string(self, key: str, default: str | None = None) -> str:
        value = self._get(key, default, default is None)
        if not isinstance(value, str) or not value:
            raise ConfigError(self.at(key), f"must be a non-empty string, got {value!r}")
        return value

    def name(self, key: str, default: str | None = None) -> str:
        value = self.string(key, default)
        if not NAME_RE.match(value):
            raise ConfigError(
                self.at(key), f"{value!r} is not a name (letters, digits, . _ -; 1-63 chars)"
            )
        return value

    def choice(self, key: str, choices: tuple[str, ...], default: str | None = None) -> str:
        value = self.string(key, default)
        if value not in choices:
            raise ConfigError(self.at(key), f"must be one of {', '.join(choices)}, got {value!r}")
        return value

    def integer(self, key: str, default: Any = ..., *, lo: int, hi: int) -> Any:
        value = self._get(key, None if default is ... else default, default is ...)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(self.at(key), f"must be an integer, got {value!r}")
        if not lo <= value <= hi:
            raise ConfigError(self.at(key), f"must be in {lo}..{hi}, got {value}")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        value = self._get(key, default, False)
        if not isinstance(value, bool):
            raise ConfigError(self.at(key), f"must be true or false, got {value!r}")
        return value

    def number(self, key: str, default: float, *, lo: float, hi: float) -> float:
        value = self._get(key, default, False)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(self.at(key), f"must be a number, got {value!r}")
        if not lo <= value <= hi:
            raise ConfigError(self.at(key), f"must be in [{lo}, {hi}], got {value}")
        return float(value)

    def address(self, key: str, default: str | None = None) -> str:
        value = self.string(key, default)
        try:
            split_host_port(value)
        except ValueError as exc:
            raise ConfigError(self.at(key), str(exc)) from exc
        return value

    def network(self, key: str) -> ipaddress.IPv4Network:
        value = self.string(key)
        try:
            return ipaddress.IPv4Network(value, strict=True)
        except ValueError as exc:
            raise ConfigError(self.at(key), f"{value!r} is not an IPv4 prefix: {exc}") from exc

    def path(self, key: str, required: bool = False, exists: bool = False) -> Path | None:
        value = self._get(key, None, required)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise ConfigError(self.at(key), f"must be a path string, got {value!r}")
        p = Path(value)
        p = p if p.is_absolute() else self.base_dir / p
        if exists and not p.is_file():
            raise ConfigError(self.at(key), f"{p} does not exist (run `make build`?)")
        return p
