"""A free TCP port on loopback, for the servers tests, bench and testbeds start (gRPC, Thrift,
metrics): one helper instead of a copy in each."""

from __future__ import annotations

import socket

# Ports handed out by this process. The kernel may pick a just-closed port again, so two calls
# before either caller binds could name the same port; and gRPC binds with SO_REUSEPORT, so a
# gRPC server succeeds on a port another server then cannot bind (seen: a replica's metrics
# port equal to another replica's API port, "Address already in use").
_given: set[int] = set()


def free_port() -> int:
    """A port no one listens on now (the kernel's pick) and not handed out before by this
    process; the caller binds it soon after."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _given:
            _given.add(port)
            return port
