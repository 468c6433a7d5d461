"""The loss meter reads interfaces in network namespaces as well as in the root one (the fabric
experiment's hosts live in namespaces): a veth pair with one end in a namespace, frames sent
from the root end, counted on both; the peer end set down, the drops counted as veth drops.
No switch; needs root (skips otherwise)."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator

import pytest

from evaluation.hosts.losses import (
    HostCounts,
    Iface,
    Link,
    Topology,
    attribute,
    read_ifaces,
)
from evaluation.hosts.losses import Snapshot as Snap

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (veth pairs, netns)")

NS, ROOT_END, NS_END = "symphony-losses-test", "lsx0", "lsx1"


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


@pytest.fixture
def pair() -> Iterator[Link]:
    subprocess.run(["ip", "link", "del", ROOT_END], capture_output=True)
    subprocess.run(["ip", "netns", "del", NS], capture_output=True)
    sh("ip", "netns", "add", NS)
    try:
        sh("ip", "link", "add", ROOT_END, "type", "veth", "peer", "name", NS_END, "netns", NS)
        sh("sysctl", "-qw", f"net.ipv6.conf.{ROOT_END}.disable_ipv6=1")
        sh("ip", "link", "set", ROOT_END, "up")
        sh("ip", "-n", NS, "link", "set", NS_END, "up")
        yield Link(Iface(ROOT_END), Iface(NS_END, NS))
    finally:
        subprocess.run(["ip", "link", "del", ROOT_END], capture_output=True)
        subprocess.run(["ip", "netns", "del", NS], capture_output=True)


def send(n: int) -> None:
    frame = bytes.fromhex("0200000000020200000000010800") + bytes(100)
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0800)) as s:
        s.bind((ROOT_END, 0))
        for _ in range(n):
            s.send(frame)


def test_counters_of_an_interface_in_a_namespace(pair: Link) -> None:
    before = read_ifaces([pair.a, pair.b])
    send(20)
    after = read_ifaces([pair.a, pair.b])
    assert after[pair.a]["tx_packets"] - before[pair.a]["tx_packets"] == 20
    assert after[pair.b]["rx_packets"] - before[pair.b]["rx_packets"] == 20


def test_a_peer_that_is_down_is_counted_as_veth_drops_in_a_namespace(pair: Link) -> None:
    topo = Topology(switches=(), links=(pair,))
    sh("ip", "-n", NS, "link", "set", NS_END, "down")
    before = Snap(read_ifaces(topo.ifaces()), {})
    send(7)
    diff = Snap(read_ifaces(topo.ifaces()), {}).minus(before)
    losses = attribute(diff, topo, HostCounts(sent=7, received=0, socket_drops=0))
    assert losses.places["veth"] == 7 and losses.unattributed == 0
    assert losses.detail == {f"{ROOT_END}->{NS}:{NS_END} veth": 7}
