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


def unicast_ipv4(text: str) -> ipaddress.IPv4Address:
    """A host's IPv4 address in dotted-quad form (no leading zeros); ValueError when it is not
    one, or not a unicast host address (0.0.0.0, multicast, reserved, broadcast)."""
    try:
        addr = ipaddress.IPv4Address(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an IPv4 address") from None
    if addr.is_unspecified or addr.is_multicast or addr.is_reserved or int(addr) == 0xFFFFFFFF:
        raise ValueError(f"{addr} is not a unicast host address")
    return addr
