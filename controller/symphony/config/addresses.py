"""host:port addresses and what counts as loopback."""

from __future__ import annotations

import ipaddress

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")


def split_host_port(address: str) -> tuple[str, int]:
    """'host:port' or '[v6]:port' -> (host, port); raises ValueError."""
    host, sep, port = address.rpartition(":")
    if not sep or not host:
        raise ValueError(f"{address!r} is not host:port")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{address!r} has no valid TCP port")
    return host, int(port)


def is_loopback_host(host: str) -> bool:
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
