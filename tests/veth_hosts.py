"""Two emulated hosts on a veth pair, one end in a network namespace of its own, for the hosts'
tests that need real sockets but no switch (tests/test_hosts_*_netns.py); and the deliveries of a
Fabric run on them. Needs root."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

from evaluation.hosts.nic import Fabric, Host, ReceiverQP, StepLog


def sh(*cmd: str, input: str | None = None) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True, input=input)


@contextmanager
def veth_hosts(ns: str, a_end: str, b_end: str, subnet: int) -> Iterator[list[Host]]:
    """Host 0 on `a_end` (this namespace) and host 1 on `b_end` (in `ns`), addresses
    10.`subnet`.0.1 and .2; everything made here is removed on the way out."""
    subprocess.run(["ip", "link", "del", a_end], capture_output=True)
    subprocess.run(["ip", "netns", "del", ns], capture_output=True)
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "link", "add", a_end, "type", "veth", "peer", "name", b_end, "netns", ns)
        sh("ip", "link", "set", a_end, "up")
        sh("ip", "-n", ns, "link", "set", b_end, "up")
        yield [
            Host(0, a_end, f"10.{subnet}.0.1", f"02:00:0a:{subnet:02x}:00:01"),
            Host(1, b_end, f"10.{subnet}.0.2", f"02:00:0a:{subnet:02x}:00:02", netns=ns),
        ]
    finally:
        subprocess.run(["ip", "link", "del", a_end], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def deliveries(fab: Fabric) -> list[StepLog]:
    """The messages `fab` delivers, in order, as its run goes (set before the run)."""
    delivered: list[StepLog] = []

    def on_delivered(_rx: ReceiverQP, msg: StepLog, _now: float) -> None:
        delivered.append(msg)

    fab.on_delivered = on_delivered
    return delivered
