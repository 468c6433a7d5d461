"""The emulated hosts' optional go-back-N (evaluation/hosts/nic.py, `rto_s`): two hosts on a veth
pair (one end in a namespace) whose receiving end drops every 7th RoCEv2 frame (an nftables
netdev ingress rule, before the host's AF_PACKET socket sees it). With `rto_s` every message is
delivered whole, in PSN order, by resending from the first missing PSN; without it (the
experiments' default) nothing is resent and the messages stay incomplete.
No switch; needs root and nft (skips otherwise)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
from veth_hosts import deliveries, sh, veth_hosts

from evaluation.hosts import experiments as ex
from evaluation.hosts.nic import Fabric, Host, StepLog

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("nft") is None, reason="needs root and nft (veth, netns)"
)

NS, A_END, B_END = "symphony-rtx-test", "rtx0", "rtx1"
DROP_EVERY = 7


@pytest.fixture
def hosts() -> Iterator[list[Host]]:
    with veth_hosts(NS, A_END, B_END, 77) as pair:
        sh(
            "ip", "netns", "exec", NS, "nft", "-f", "-",
            input=(
                "table netdev symphony_rtx_test {\n chain c {\n"
                f"  type filter hook ingress device {B_END} priority 0; policy accept;\n"
                f"  ip protocol udp udp dport 4791 numgen inc mod {DROP_EVERY} 0 drop\n"
                " }\n}\n"
            ),
        )  # fmt: skip
        yield pair


def run(hosts: list[Host], rto_s: float | None) -> tuple[Fabric, list[StepLog]]:
    fab = Fabric(hosts, ex.Setup(2000.0).scaled(), payload=256, seed=1, rt_priority=0, rto_s=rto_s)
    delivered = deliveries(fab)
    fab.open()
    try:
        qp = fab.connect("a-b", 0, 1, tag=1)
        msgs = [fab.post(qp, step, 40, 0.0) for step in range(1, 4)]
        fab.run(lambda t: len(delivered) == 3 or (t > 0.5 and fab.quiet_for(t) > 0.5), limit_s=20)
        fab.drain()
    finally:
        fab.close()
    assert delivered == [m for m in msgs if m.received == m.packets]
    return fab, msgs


def test_go_back_n_delivers_every_message(hosts: list[Host]) -> None:
    fab, msgs = run(hosts, rto_s=0.05)
    assert all(m.received == m.packets for m in msgs), [(m.received, m.packets) for m in msgs]
    [qp] = fab.senders.values()
    [rx] = fab.receivers.values()
    assert qp.retransmits > 0 and qp.resent > 0
    assert rx.received == 120  # each PSN taken once, in order
    assert rx.expected_psn == qp.psn
    assert rx.out_of_order > 0  # frames after a gap were discarded, as go-back-N does


def test_without_rto_nothing_is_resent(hosts: list[Host]) -> None:
    fab, msgs = run(hosts, rto_s=None)
    [qp] = fab.senders.values()
    [rx] = fab.receivers.values()
    assert qp.sent == 120 and qp.retransmits == 0 and qp.resent == 0
    assert rx.received == 120 - 120 // DROP_EVERY - (120 % DROP_EVERY > 0)
    assert not all(m.received == m.packets for m in msgs)
