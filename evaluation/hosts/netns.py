"""Sockets inside a named network namespace (`ip netns add NAME`), from one ordinary process.

The fabric's hosts (symphony_tools/fabric.py) each live in a namespace of their own, but the
emulated hosts are one event loop in one process (nic.py). A socket belongs to the namespace its
creator was in when it was made, and keeps it: so the calling thread enters the namespace,
creates and binds the socket, and returns to its own namespace. Only that thread moves (setns(2)
acts on the calling thread), and only for the few system calls in between; the rest of the
process never leaves the namespace it started in.
"""

from __future__ import annotations

import ctypes
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

CLONE_NEWNET = 0x40000000
ETH_P_ALL = 0x0003
# Where `ip netns add NAME` keeps the namespace (a bind mount of its /proc/PID/ns/net).
NETNS_DIR = Path("/run/netns")

_libc = ctypes.CDLL(None, use_errno=True)


class NetnsError(OSError):
    pass


def _setns(fd: int, what: str) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise NetnsError(err, f"setns into {what}: {os.strerror(err)}")


@contextmanager
def entered(netns: str) -> Iterator[None]:
    """The calling thread inside network namespace `netns` for the block, back after it
    (also when the block raises). Needs CAP_SYS_ADMIN (root)."""
    path = NETNS_DIR / netns
    try:
        target = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise NetnsError(2, f"network namespace {netns!r} not found ({path})") from None
    # This thread's own namespace: /proc/thread-self, not /proc/self (another thread's view).
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _setns(target, f"namespace {netns!r}")
        try:
            yield
        finally:
            _setns(home, "the thread's own namespace")
    finally:
        os.close(target)
        os.close(home)


def packet_socket(ifname: str, netns: str | None = None, proto: int = ETH_P_ALL) -> socket.socket:
    """An AF_PACKET raw socket bound to interface `ifname` of namespace `netns` (None: the
    caller's own), receiving frames of ethertype `proto` (0: none, a send-only socket)."""
    if netns is None:
        return _bound(ifname, proto)
    with entered(netns):
        return _bound(ifname, proto)


def _bound(ifname: str, proto: int) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(proto))
    try:
        s.bind((ifname, 0))
    except OSError as exc:
        s.close()
        raise NetnsError(exc.errno, f"cannot bind to interface {ifname!r}: {exc}") from None
    return s
