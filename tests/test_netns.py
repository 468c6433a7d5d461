"""evaluation/hosts/netns.py: one process opens AF_PACKET sockets inside a named namespace.

A veth pair with one end (sf-nt1) moved into namespace sf-nstest: a socket opened "in" the
namespace binds to sf-nt1 (a name the caller's namespace does not have) and exchanges frames with
a socket on the other end, sf-nt0, in the caller's namespace; the thread is back home afterwards.
Needs root and iproute2 (the fabric needs both too).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator

import pytest

from evaluation.hosts import netns

NS, OUT, IN = "sf-nstest", "sf-nt0", "sf-nt1"

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None,
    reason="network namespaces need root and iproute2 (ip)",
)


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture
def pair() -> Iterator[None]:
    subprocess.run(["ip", "netns", "del", NS], capture_output=True)
    subprocess.run(["ip", "link", "del", OUT], capture_output=True)
    ip("netns", "add", NS)
    try:
        ip("link", "add", OUT, "type", "veth", "peer", "name", IN, "netns", NS)
        ip("link", "set", OUT, "up")
        ip("-n", NS, "link", "set", IN, "up")
        yield
    finally:
        subprocess.run(["ip", "link", "del", OUT], capture_output=True)
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)


def frame(src: int, tag: bytes) -> bytes:
    # Local experimental ethertype 0x88B5: nothing in either namespace answers it.
    return bytes.fromhex("020000000001") + bytes([2, 0, 0, 0, 0, src]) + b"\x88\xb5" + tag * 50


def receive(s: socket.socket, want: bytes) -> bool:
    s.settimeout(2.0)
    try:
        while True:
            data, addr = s.recvfrom(65535)
            if addr[2] != 4 and data[: len(want)] == want:  # not our own outgoing copy
                return True
    except TimeoutError:
        return False


def test_socket_inside_namespace_exchanges_frames(pair: None) -> None:
    home = os.stat("/proc/thread-self/ns/net").st_ino
    inside = netns.packet_socket(IN, NS)
    outside = netns.packet_socket(OUT)
    try:
        assert os.stat("/proc/thread-self/ns/net").st_ino == home
        out_frame, in_frame = frame(1, b"o"), frame(2, b"i")
        inside.send(in_frame)
        assert receive(outside, in_frame), "frame sent in the namespace did not arrive outside"
        outside.send(out_frame)
        assert receive(inside, out_frame), "frame sent outside did not arrive in the namespace"
    finally:
        inside.close()
        outside.close()


def test_interface_of_the_namespace_is_not_visible_outside(pair: None) -> None:
    with pytest.raises(netns.NetnsError, match=IN):
        netns.packet_socket(IN)


def test_unknown_namespace_is_named() -> None:
    home = os.stat("/proc/thread-self/ns/net").st_ino
    with pytest.raises(netns.NetnsError, match="sf-nosuchns"):
        netns.packet_socket("lo", "sf-nosuchns")
    assert os.stat("/proc/thread-self/ns/net").st_ino == home


def test_thread_returns_home_when_the_block_raises(pair: None) -> None:
    home = os.stat("/proc/thread-self/ns/net").st_ino
    with pytest.raises(RuntimeError), netns.entered(NS):
        assert os.stat("/proc/thread-self/ns/net").st_ino != home
        raise RuntimeError("inside")
    assert os.stat("/proc/thread-self/ns/net").st_ino == home
