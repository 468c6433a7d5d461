"""Checks on every field of a job request, before anything is written.

A request is either valid as a whole or refused with the first faulty field named; nothing is
stored, and no switch is touched, for a refused request.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from symphony.config.addresses import unicast_ipv4
from symphony.config.topology import Topology, path_switches
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


def hosts(
    values: Iterable[str], job_mode: str, topology: Topology | None = None
) -> tuple[str, ...]:
    """The job's hosts as IPv4 addresses. Each is an address or, with a topology, a host's name.

    Mode "hosts" classifies the job's packets by these source addresses. Mode "tag" classifies by
    the BTH tag; its hosts, allowed with a topology only, name the job's members so that its
    switches can be derived from them (docs/controller.md "A job's switches")."""
    values = list(values)
    if job_mode == "tag" and topology is None:
        if values:
            raise invalid(
                "hosts",
                "mode 'tag' takes hosts only to derive its switches from the config's topology,"
                " and there is none: leave it empty",
            )
        return ()
    if not values and job_mode == "hosts":
        raise invalid("hosts", "mode 'hosts' needs at least one IPv4 address")
    if len(values) > MAX_HOSTS:
        raise invalid("hosts", f"at most {MAX_HOSTS} addresses, got {len(values)}")
    out: list[str] = []
    for i, v in enumerate(values):
        known = topology.host(v) if topology is not None else None
        if known is not None:
            addr = str(known.address)
        elif topology is not None and not _looks_like_ipv4(v):
            raise invalid(
                f"hosts[{i}]", f"unknown host {v!r}: neither a host of the topology nor an address"
            )
        else:
            addr = ipv4_host(v, f"hosts[{i}]")
        if addr in out:
            twice = addr if v == addr else f"{v} ({addr})"
            raise invalid(f"hosts[{i}]", f"{twice} is listed twice")
        out.append(addr)
    return tuple(out)


def _looks_like_ipv4(value: str) -> bool:
    return value.count(".") == 3 and all(p.isascii() and p.isdigit() for p in value.split("."))


def switches_of(hosts: Sequence[str], topology: Topology) -> tuple[str, ...]:
    """A job's switches derived from its hosts (their addresses, as `hosts` returns them): every
    switch on a shortest path between two of them; one host: its own switch."""
    if not hosts:
        raise invalid(
            "switches",
            "a job needs its switches, or its hosts to derive them from the topology: give either",
        )
    ends = []
    for i, addr in enumerate(hosts):
        host = topology.host(addr)
        if host is None:
            raise invalid(
                f"hosts[{i}]",
                f"{addr} is not a host of the topology: its switches cannot be derived (name"
                " the job's switches, or add the host to the config)",
            )
        ends.append(host.switch)
    return path_switches(topology, ends)


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
    "switches_of",
]
