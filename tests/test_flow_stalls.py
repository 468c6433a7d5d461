"""Flow by flow (evaluation/fabric/flow_stalls.py): on a fabric where one flow's ACKs cross a
port two other flows' data queue on, the ACKs wait and the flow stalls at its window with ACKs
behind data; in the ACK class they wait at most a frame and the stalls go."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evaluation.fabric import flow_stalls as fs
from evaluation.fabric import regime_map as rm

MiB = 1 << 20
# host 0 -> host 1 on ToR 0 (its ACKs come back down ToR 0's port to host 0), while hosts 8
# and 16 (ToRs 1 and 2) send into host 0: their data queues on that port
FLOWS = [(0, 1, 0, 2000, 0), (8, 0, 0, 4000, 0), (16, 0, 1, 4000, 0)]


@pytest.fixture(scope="module")
def runs() -> dict[str, list[fs.FlowStats]]:
    reg = rm.Regime("2d", "windowed", 32, MiB)
    out = {}
    for name in ("dcqcn", "ack"):
        cfg = replace(rm.config(reg, rm.BY_NAME[name]), start_jitter_ns=0)
        out[name] = fs.run(cfg, 0, FLOWS)[1]
    return out


def test_acks_behind_data_wait_and_hold_their_sender_at_the_window(runs) -> None:
    a, b, c = runs["dcqcn"]
    assert a.frames == 2000 and (b.src, b.dst) == (8, 0)
    assert a.ack_wait_mean_us > 5.0  # the incast's queue on the port to host 0
    assert a.stall_us > 0.1 * a.duration_us
    assert a.data_wait_mean_us < 0.1  # its own data crosses an idle port
    assert min(b.data_wait_mean_us, c.data_wait_mean_us) > 5.0


def test_in_the_ack_class_acks_wait_at_most_a_frame_and_the_stalls_go(runs) -> None:
    a = runs["ack"][0]
    frame_us = 1036 * 8 / 10e3
    assert a.ack_wait_max_us <= frame_us + 1e-6
    assert a.stall_us < 0.01 * a.duration_us
    assert a.duration_us < runs["dcqcn"][0].duration_us


def test_nic_sharing_counts_the_senders_flows_in_flight_together(runs) -> None:
    assert [round(x.nic_sharing, 6) for x in runs["dcqcn"]] == [1.0, 1.0, 1.0]
    cfg = replace(rm.config(rm.Regime("2d", "windowed", 32, MiB), rm.BY_NAME["dcqcn"]))
    # two flows of host 0 at once, then a third after both ended
    a, b, c = fs.run(cfg, 0, [(0, 1, 0, 500, 0), (0, 2, 0, 500, 0), (0, 3, 0, 100, 10**9)])[1]
    assert a.nic_sharing == pytest.approx(2.0, abs=0.01)
    assert b.nic_sharing == pytest.approx(2.0, abs=0.01)
    assert c.nic_sharing == 1.0
