"""The emulated hosts under a profile with ACK frames (evaluation/hosts/nic.py; HPCC's NIC):
every data frame answered by a RoCEv2 ACK that returns to its sender, and a windowed sender that
never has more frames unacknowledged than its window allows. Two hosts on a veth pair (one end
in a namespace); to make the window's bound visible without timing, an nftables netdev ingress
rule on the sender's end drops every ACK (BTH opcode 0x11), so a windowed sender stops once its
window is full. No switch; needs root and nft (skips otherwise)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import replace

import pytest
from veth_hosts import deliveries, sh, veth_hosts

from evaluation.fabric.dcqcn import HPCC_CONFIG, Dcqcn
from evaluation.hosts import experiments as ex
from evaluation.hosts import wire
from evaluation.hosts.nic import Fabric, Host, StepLog

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("nft") is None, reason="needs root and nft (veth, netns)"
)

NS, A_END, B_END = "symphony-ack-test", "ackt0", "ackt1"
PACKETS = 60
PAYLOAD = 256
# a MIDDLE frame's bytes: the window counts whole frames, as the simulator's kernel does
FRAME = PAYLOAD + wire.ETH_LEN + wire.IP_LEN + wire.UDP_LEN + wire.BTH_LEN + wire.ICRC_LEN


def drop_acks() -> None:
    """Drop every RoCEv2 ACK reaching the sender's end (the first BTH byte after UDP's 8)."""
    sh(
        "nft", "-f", "-",
        input=(
            "table netdev symphony_ack_test {\n chain c {\n"
            f"  type filter hook ingress device {A_END} priority 0; policy accept;\n"
            "  udp dport 4791 @th,64,8 0x11 drop\n"
            " }\n}\n"
        ),
    )  # fmt: skip


@pytest.fixture
def hosts() -> Iterator[list[Host]]:
    try:
        with veth_hosts(NS, A_END, B_END, 78) as pair:
            yield pair
    finally:
        subprocess.run(
            ["nft", "delete", "table", "netdev", "symphony_ack_test"], capture_output=True
        )


def run(
    hosts: list[Host], window_frames: int, profile: Dcqcn = HPCC_CONFIG, prop_s: float = 0.0
) -> tuple[Fabric, StepLog]:
    fab = Fabric(
        hosts,
        ex.Setup(2000.0, dcqcn=profile).scaled(),
        payload=PAYLOAD,
        seed=1,
        rt_priority=0,
        prop_s=(lambda _a, _b: prop_s) if prop_s else None,
    )
    delivered = deliveries(fab)
    fab.open()
    try:
        qp = fab.connect("a-b", 0, 1, tag=1, window=window_frames * FRAME)
        assert qp.frame_bytes == FRAME
        msg = fab.post(qp, 1, PACKETS, 0.0)
        fab.run(lambda t: bool(delivered) or (t > 0.3 and fab.quiet_for(t) > 0.3), limit_s=20)
        fab.drain()
    finally:
        fab.close()
    return fab, msg


def test_every_frame_is_acknowledged_and_the_window_holds(hosts: list[Host]) -> None:
    fab, msg = run(hosts, window_frames=3)
    qp = next(iter(fab.senders.values()))
    rx = qp.receiver
    assert rx is not None
    assert msg.received == PACKETS and rx.acks == PACKETS  # one ACK per data frame
    assert qp.acks == PACKETS and qp.una == qp.psn  # every ACK came back, all acknowledged
    assert 1 <= qp.max_in_flight <= 3  # never more unacknowledged than the window
    assert rx.cnps == 0  # no frame was CE-marked: no ACK carried BECN
    assert fab.frames_sent == 2 * PACKETS  # data and ACKs, no CNP frames


def test_a_windowed_sender_stops_when_no_ack_returns(hosts: list[Host]) -> None:
    drop_acks()
    fab, msg = run(hosts, window_frames=5)
    qp = next(iter(fab.senders.values()))
    assert qp.sent == 5 and qp.acks == 0  # the window filled, then nothing more
    assert qp.window_stalls == 1 and qp.window_bound
    assert msg.received == 5


def test_without_a_window_the_acks_bound_nothing(hosts: list[Host]) -> None:
    drop_acks()
    fab, msg = run(
        hosts, window_frames=0, profile=replace(HPCC_CONFIG, has_win=False, var_win=False)
    )
    qp = next(iter(fab.senders.values()))
    assert qp.sent == PACKETS and msg.received == PACKETS and qp.acks == 0
    assert qp.max_in_flight == PACKETS


def test_a_window_without_ack_frames_is_refused(hosts: list[Host]) -> None:
    fab = Fabric(hosts, ex.Setup(2000.0).scaled(), payload=PAYLOAD, seed=1, rt_priority=0)
    with pytest.raises(ValueError, match="needs ACK frames"):
        fab.connect("a-b", 0, 1, tag=1, window=3000)


def test_propagation_holds_every_frame_so_the_window_waits_a_round_trip(
    hosts: list[Host],
) -> None:
    # 50 ms each way, a window of 3 frames sent in 1.5 ms: the sender waits for a round trip
    # after every window's worth, so the window fills ceil(60 / 3) - 1 = 19 times at least
    fab, msg = run(hosts, window_frames=3, prop_s=0.05)
    qp = next(iter(fab.senders.values()))
    assert msg.received == PACKETS and qp.acks == PACKETS and not fab.held
    assert qp.window_stalls >= PACKETS // 3 - 1
    assert qp.max_in_flight == 3


def test_a_hosts_qps_share_its_link_round_robin(hosts: list[Host]) -> None:
    """Two sends of one host, due at once, take turns on its link (HPCC's GetNxtQp, the
    kernel's ready queue): neither runs to its end before the other starts, so both are on the
    wire side by side as in the simulator. Order only: the receiver's arrivals, merged."""
    fab = Fabric(hosts, ex.Setup(2000.0, dcqcn=HPCC_CONFIG).scaled(), payload=PAYLOAD, seed=1,
                 rt_priority=0)  # fmt: skip
    delivered = deliveries(fab)
    fab.open()
    try:
        qps = [fab.connect(f"a-b{i}", 0, 1, tag=1, window=0) for i in range(2)]
        for i, qp in enumerate(qps):
            fab.post(qp, i, PACKETS, 0.0)
        fab.run(lambda t: len(delivered) == 2 or t > 10.0, limit_s=20)
        fab.drain()
    finally:
        fab.close()
    assert len(delivered) == 2
    arrivals = sorted(
        (t, i) for i, qp in enumerate(qps) for t, _step, _ce in qp.receiver.arrivals
    )  # fmt: skip
    first = [i for _t, i in arrivals[: PACKETS // 2]]
    # the first half of the arrivals: the two QPs alternate (one at a time may lead by a frame)
    assert abs(first.count(0) - first.count(1)) <= 2, first
