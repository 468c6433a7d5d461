"""A free TCP port on loopback, for the servers tests, bench and testbeds start (gRPC, Thrift,
metrics): one helper instead of a copy in each."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port no one listens on now (the kernel's pick); the caller binds it soon after."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
