"""The loss attribution on the real switch (evaluation/hosts/losses.py): frames dropped on purpose
at a known place are counted at that place, and sent - received equals the sum of the places.

- a full bmv2 egress queue (4 packets deep, drained at 50 packets/s, a burst of 200): queue drops
  of that port;
- a receiver that stops reading (a socket buffer of a few frames, not read while 100 arrive):
  socket drops;
- a host interface that is down (its veth peer cannot take a frame): veth drops of that pair.

Starts its own bmv2 (veth60-67, P4Runtime 9659, Thrift 9190) and controller, away from the
experiment's and the PTF suite's ports; needs root, simple_switch_grpc and `make build`.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from conformance import packets as rp  # noqa: E402
from evaluation.hosts import wire  # noqa: E402
from evaluation.hosts.losses import PLACES, HostCounts, Losses, socket_drops  # noqa: E402
from evaluation.hosts.nic import ETH_P_IP, PACKET_OUTGOING, Host  # noqa: E402
from evaluation.hosts.testbed import DEFAULT_ENV, Testbed  # noqa: E402
from symphony_tools.testbed import bmv2_missing  # noqa: E402

pytestmark = [
    pytest.mark.bmv2,
    pytest.mark.skipif(bmv2_missing() is not None, reason=f"bmv2 test skipped: {bmv2_missing()}"),
]

ENV = replace(
    DEFAULT_ENV,
    grpc_addr="127.0.0.1:9659",
    thrift_port=9190,
    veth_base=60,
    run_dir=ROOT / "run/bmv2-losses",
)
FAST = 100_000  # packets/s: a queue that never holds anything back here
DEPTH = 1000


@pytest.fixture(scope="module")
def tb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    with Testbed(tmp_path_factory.mktemp("losses"), env=ENV, queue_depth=DEPTH) as t:
        t.set_rates(dict.fromkeys(range(ENV.ports), FAST))
        yield t


class Hosts:
    """Raw sockets on the hosts' side of the switch ports; counts what they send and read."""

    def __init__(self, tb: Testbed, ports: list[int], rcvbuf: int | None = None) -> None:
        self.socks = {}
        for p in ports:
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
            if rcvbuf is not None:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            s.bind((tb.env.host_if(p), 0))
            s.setblocking(False)
            self.socks[p] = s
        self.sent = self.received = self.drops = 0
        self.drain()
        self.received, self.drops = 0, 0  # what came before is not the test's

    def frames(self, src: int, dst: int) -> wire.FlowFrames:
        a = Host(src, "").endpoint
        b = Host(dst, "").endpoint
        return wire.FlowFrames(a, b, dqpn=0x200 + dst, tag=0, payload_len=256)

    def send(self, src: int, dst: int, n: int, gap_s: float = 0.0) -> None:
        frames = self.frames(src, dst)
        for i in range(n):
            self.socks[src].send(frames.build(rp.WRITE_MIDDLE, 0, i))
            self.sent += 1
            if gap_s:
                time.sleep(gap_s)

    def drain(self) -> HostCounts:
        for s in self.socks.values():
            while True:
                try:
                    _data, addr = s.recvfrom(65535)
                except BlockingIOError:
                    break
                if addr[2] != PACKET_OUTGOING:
                    self.received += 1
            self.drops += socket_drops(s)
        return HostCounts(self.sent, self.received, self.drops)

    def close(self) -> None:
        for s in self.socks.values():
            s.close()


def _only(losses: Losses, place: str) -> None:
    """Every lost frame was lost at `place`, and the places add up to sent - received."""
    assert losses.lost > 0, losses
    assert losses.places[place] == losses.lost, losses
    assert all(n == 0 for p, n in losses.places.items() if p != place), losses
    assert losses.unattributed == 0, losses


def test_a_full_queue_is_counted_as_that_ports_queue_drops(tb: Testbed) -> None:
    assert tb.thrift is not None and tb.meter is not None
    tb.thrift.set_queue_depth(4, 2)
    tb.thrift.set_queue_rate(50, 2)
    hosts = Hosts(tb, [0, 2])
    try:
        before = tb.meter.snapshot()
        hosts.send(0, 2, 200)
        losses = tb.meter.settle(before, hosts.drain)
    finally:
        hosts.close()
        tb.thrift.set_queue_depth(DEPTH, 2)
        tb.thrift.set_queue_rate(FAST, 2)
    _only(losses, "queue")
    assert losses.sent == 200
    assert losses.detail == {"s1 port 2 queue": losses.lost}
    assert losses.received >= 4  # the queue's depth got through, at least
    assert losses.harness == 0


def test_a_receiver_that_stops_reading_is_counted_as_socket_drops(tb: Testbed) -> None:
    assert tb.meter is not None
    hosts = Hosts(tb, [0, 3], rcvbuf=4096)  # the kernel's minimum: a few frames
    try:
        before = tb.meter.snapshot()
        hosts.send(0, 3, 100, gap_s=0.001)
        # Not reading until every frame has left the switch towards host 3.
        switch_side = tb.switch_iface(3)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            diff = tb.meter.snapshot().minus(before)
            if diff.ifaces[switch_side]["tx_packets"] >= 100:
                break
            time.sleep(0.05)
        losses = tb.meter.settle(before, hosts.drain)
    finally:
        hosts.close()
    _only(losses, "socket")
    assert losses.received < 10, losses  # only what fitted in the buffer
    assert losses.harness == losses.lost


def test_a_host_interface_that_is_down_is_counted_as_veth_drops(tb: Testbed) -> None:
    assert tb.meter is not None
    host_if = tb.env.host_if(1)
    hosts = Hosts(tb, [0])
    subprocess.run(["ip", "link", "set", host_if, "down"], check=True)
    try:
        before = tb.meter.snapshot()
        hosts.send(0, 1, 50, gap_s=0.001)
        losses = tb.meter.settle(before, hosts.drain)
    finally:
        subprocess.run(["ip", "link", "set", host_if, "up"], check=True)
        hosts.close()
    _only(losses, "veth")
    assert losses.lost == 50
    assert losses.detail == {f"{tb.env.switch_if(1)}->{host_if} veth": 50}


def test_nothing_lost_nothing_attributed(tb: Testbed) -> None:
    assert tb.meter is not None
    hosts = Hosts(tb, [0, 2])
    try:
        before = tb.meter.snapshot()
        hosts.send(0, 2, 100, gap_s=0.0005)
        losses = tb.meter.settle(before, hosts.drain)
    finally:
        hosts.close()
    assert losses.lost == 0 and losses.attributed == 0, losses
    assert set(losses.places) == set(PLACES)
