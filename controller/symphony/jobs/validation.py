"""Checks on every field of a job request, before anything is written.

A request is either valid as a whole or refused with the first faulty field named; nothing is
stored, and no switch is touched, for a refused request.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping
from typing import Any

from symphony.config.addresses import unicast_ipv4
from symphony.jobs.allocator import MODES
from symphony.jobs.errors import JobError, invalid
from symphony.model.params import ParamError, check_overrides
from symphony.sizes import MAX_JOBS, NAME_RE

REQUEST_KEY_RE = re.compile(r"^[A-Za-z0-9._:/-]{1,128}$")
MAX_HOSTS = 4096


def name(value: str, field: str = "name") -> str:
    if not NAME_RE.match(value or ""):
        raise invalid(
            field,
            f"{value!r} is not a name (letters, digits, . _ -; 1-63 chars, "
            "starting with a letter or digit)",
        )
    return value


def request_key(value: str) -> str:
    if not REQUEST_KEY_RE.match(value or ""):
        raise invalid("request_key", f"{value!r} must be 1-128 chars of letters, digits, . _ : / -")
    return value


def mode(value: str) -> str:
    if value not in MODES:
        raise invalid("mode", f"must be one of {', '.join(MODES)}, got {value!r}")
    return value


def job_id(value: int) -> int:
    if not 1 <= value < MAX_JOBS:
        raise invalid("job_id", f"must be in 1..{MAX_JOBS - 1}, got {value}")
    return value


def ipv4_host(value: str, field: str) -> str:
    try:
        return str(unicast_ipv4(value))
    except ValueError as exc:
        raise invalid(field, str(exc)) from None


def hosts(values: Iterable[str], job_mode: str) -> tuple[str, ...]:
    values = list(values)
    if job_mode == "tag":
        if values:
            raise invalid("hosts", "only mode 'hosts' classifies by address; leave it empty")
        return ()
    if not values:
        raise invalid("hosts", "mode 'hosts' needs at least one IPv4 address")
    if len(values) > MAX_HOSTS:
        raise invalid("hosts", f"at most {MAX_HOSTS} addresses, got {len(values)}")
    out: list[str] = []
    for i, v in enumerate(values):
        addr = ipv4_host(v, f"hosts[{i}]")
        if addr in out:
            raise invalid(f"hosts[{i}]", f"{addr} is listed twice")
        out.append(addr)
    return tuple(out)


def switches(values: Iterable[str], known: Collection[str]) -> tuple[str, ...]:
    values = list(values)
    if not values:
        raise invalid("switches", "a job needs at least one switch on its path")
    out: list[str] = []
    for i, v in enumerate(values):
        if v not in known:
            raise invalid(f"switches[{i}]", f"unknown switch {v!r} (known: {', '.join(known)})")
        if v in out:
            raise invalid(f"switches[{i}]", f"{v!r} is listed twice")
        out.append(v)
    return tuple(out)


def params(values: Mapping[str, Any]) -> dict[str, Any]:
    try:
        return check_overrides(values)
    except ParamError as exc:
        raise invalid(f"params.{exc.field}", exc.reason) from exc


__all__ = [
    "JobError",
    "hosts",
    "invalid",
    "ipv4_host",
    "job_id",
    "mode",
    "name",
    "params",
    "request_key",
    "switches",
]
