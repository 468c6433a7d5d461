"""The leaf-spine simulator (evaluation/fabric): sanity checks against known answers, then a small
seeded configuration of every scenario with its invariants. The numba Symphony kernel's
equivalence with the golden model is the conformance suite's (tests/test_conformance.py; the
1 M-packet run is `python -m conformance`, and `python -m evaluation.fabric.golden_diff` in
`make evaluation`)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.fabric import symphony_kernel as sk
from evaluation.fabric.collectives import lockstep_bound_us, packets_per_npu
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.dcqcn import HPCC_RUN_DCQCN
from evaluation.fabric.scenarios import SCENARIOS, scenario_runs
from evaluation.fabric.sim import FabricResult, simulate, symphony_units
from evaluation.fabric.topology import CustomFlows, build_fabric
from symphony.model import switch_model
from symphony.model.params import JobParams

SMALL = FabricConfig(hosts=16)
# No window: DCQCN and PFC alone decide (hpcc-config's window caps every flow near one BDP).
# ACKs in the control class, as ACK_HIGH_PRIO 1 means: with them in the data class (HPCC's
# switches) the NIC's unpausable ACK queue keeps filling a paused priority's headroom.
NO_WIN = replace(SMALL, dcqcn=replace(HPCC_RUN_DCQCN, ack_queue="control"))
SER_US = SMALL.mtu * 8 / (SMALL.link_gbps * 1000)


def conserved(res: FabricResult) -> None:
    st = res.stats
    assert st["error"] == 0
    # every transmitted data packet was delivered in order, discarded by go-back-N, dropped, or
    # (a late duplicate) still in the network when the last job finished
    discarded = st["out_of_order"] + st["duplicate"] + st["dropped"] + st["left_in_flight"]
    assert st["sent"] == st["delivered"] + discarded
    assert st["bg_sent"] == st["bg_done"] + st["bg_dropped"] + st["bg_left_in_flight"]
    # every ACK/NACK reached its sender, was dropped, or was on its way at the end
    assert st["acks"] == st["acks_received"] + st["acks_dropped"] + st["acks_left_in_flight"]
    assert st["acks"] == st["delivered"] + st["nacks"]  # one ACK per in-order packet
    assert st["marks_not_outpacing"] == 0


def test_one_flow_reaches_line_rate() -> None:
    n = 4000
    res = simulate(SMALL, 0, flows=[(0, 5, 1, n, 0)])  # host 0 (ToR 0) -> host 5 (ToR 1)
    conserved(res)
    assert res.stats["delivered"] == n and res.stats["cnps"] == 0
    gbps = n * SMALL.mtu * 8 / (res.cct_us[0] * 1000)
    assert gbps > 0.99 * SMALL.link_gbps


@pytest.mark.parametrize("profile", ["hpcc-config", "hpcc-run-dcqcn"])
def test_flows_on_one_bottleneck_share_it_fairly(profile: str) -> None:
    # 4 hosts of ToR 0 to 4 hosts of ToR 1, all through spine 0: one 10 Gb/s uplink for four.
    n = 15_000
    flows = [(a, 4 + a, 0, n, 0) for a in range(4)]
    res = simulate(replace(SMALL, dcqcn=profile), 0, flows=flows)
    conserved(res)
    if profile == "hpcc-run-dcqcn":
        assert res.stats["cnps"] > 50  # no window: DCQCN did the sharing, not the buffer
    else:
        assert res.stats["cnps"] == 0  # the windows share it, below RED's K_min
    assert res.stats["dropped"] == 0
    done = res.flow_done_us
    ideal = 4 * n * SER_US
    assert done.max() < 1.05 * ideal  # the bottleneck stayed busy
    assert done.min() > 0.9 * done.max()  # and each flow got about a quarter of it


def test_lockstep_meets_the_bound() -> None:
    # every link carries one ring's data and, the other way, another flow's ACKs: the bound
    # plus the ACK bytes (48 per 1024) without a window
    cfg = replace(NO_WIN, routing="static", start_jitter_ns=0, chunk_bytes=1 << 20)
    res = simulate(cfg, 0)
    conserved(res)
    with_acks = lockstep_bound_us(cfg) * (1 + cfg.cc.ack_bytes / cfg.mtu)
    assert res.cct_max_us == pytest.approx(with_acks, rel=0.02)
    assert res.cct_max_us >= lockstep_bound_us(cfg)
    assert res.stats["queue_marks"] == 0 and max(res.max_overlap) <= 2
    # hpcc-config's window (the BDP without the ACKs' wait behind data) binds: slower, unmarked
    win = simulate(replace(cfg, dcqcn="hpcc-config"), 0)
    conserved(win)
    assert win.cct_max_us > res.cct_max_us and win.stats["queue_marks"] == 0


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_small_scenario_runs_and_conserves(scenario: str) -> None:
    runs = scenario_runs(scenario, range(1), quick=True)
    assert {r.variant for r in runs} >= {"baseline", "symphony"}
    for run in runs:
        res = simulate(run.cfg, run.seed)
        conserved(res)
        assert res.stats["delivered"] == run.cfg.hosts * packets_per_npu(run.cfg)
        assert all(c >= lockstep_bound_us(run.cfg) * 0.99 for c in res.cct_us)
        if run.cfg.jobs == 1:  # the bound covers the run's flows, of every job
            assert res.cct_max_us >= res.bound_us
        assert 1 <= max(res.max_overlap) <= res.step_span_us.shape[1]
        if not run.variant.startswith("symphony"):
            assert res.stats["symphony_marks"] == 0
        if run.cfg.pfc:
            assert res.stats["dropped"] == 0 and res.stats["out_of_order"] == 0


def test_symphony_marks_only_outpacing_and_lowers_overlap() -> None:
    cfg = replace(SMALL, chunk_bytes=256 << 10)
    base = simulate(cfg, 2)
    sym = simulate(replace(cfg, mode="symphony", symphony=JobParams(k=1.0)), 2)
    conserved(sym)
    assert sym.stats["symphony_marks"] > 100
    assert sum(sym.mean_overlap) < sum(base.mean_overlap)


def test_the_backlog_gate_holds_marks_back_from_short_queues() -> None:
    """JobParams.gate_depth in the kernel (model.switch_model.symphony_ce on the depth a packet
    joins): the deeper the gate, the fewer Symphony marks leave; a gate no queue reaches lets
    none leave, and gate 0 is the paper's policy."""
    cfg = replace(SMALL, chunk_bytes=256 << 10, mode="symphony")
    marks = {}
    for gate in (0, 8, (1 << 16) - 1):
        res = simulate(replace(cfg, symphony=JobParams(k=1.0, gate_depth=gate)), 2)
        conserved(res)
        assert res.stats["marks_not_outpacing"] == 0
        marks[gate] = res.stats["symphony_marks"]
    assert marks[0] > marks[8] > 0
    assert marks[(1 << 16) - 1] == 0


def test_the_kernels_gate_is_the_golden_models() -> None:
    for mark in (False, True):
        for depth in (0, 1, 7, 8, 9, 65535, 70000):
            for gate in (0, 1, 8, 65535):
                want = switch_model.symphony_ce(mark, depth, gate)
                assert sk.symphony_ce(mark, depth, gate) == want, (mark, depth, gate)


def test_symphony_state_units_and_tor_only_deployment() -> None:
    """FabricConfig.symphony_state / symphony_at as the kernel's units: one per switch (the
    paper's), one per egress port, or none at spine ports when only the ToRs run Symphony."""
    fab = build_fabric(SMALL)
    sw = fab.port_switch
    unit, n = symphony_units(SMALL, fab)
    assert n == fab.n_switches and (unit == sw).all()
    unit, n = symphony_units(replace(SMALL, symphony_state="port"), fab)
    ports = np.flatnonzero(sw >= 0)
    assert n == fab.n_ports and (unit[ports] == ports).all() and (unit[sw < 0] == -1).all()
    unit, _ = symphony_units(replace(SMALL, symphony_at="tor"), fab)
    tors = set(fab.tor_of.tolist())
    assert all((unit[p] >= 0) == (int(sw[p]) in tors) for p in ports)
    assert tors and any(int(sw[p]) not in tors for p in ports)  # spines are left out


def test_per_port_state_compares_only_flows_sharing_a_link() -> None:
    """Two flows of one job inside one ToR, step 0 and step 1, to different hosts: at the
    switch's state the step-1 flow runs ahead and is marked; with a state per egress port the
    two never meet, so nothing is marked; at ToRs only it is the ToR's own state again."""
    spec = CustomFlows([(0, 2, 0, 400, 0), (1, 3, 0, 400, 0)], steps=[0, 1])
    cfg = replace(SMALL, mode="symphony", symphony=JobParams(k=1.0, n_warmup=4, n_sample=4))
    marks = {
        (state, at): simulate(replace(cfg, symphony_state=state, symphony_at=at), 0, spec).stats[
            "symphony_marks"
        ]
        for state, at in (("switch", "all"), ("port", "all"), ("switch", "tor"))
    }
    assert marks["switch", "all"] > 0
    assert marks["port", "all"] == 0
    assert marks["switch", "tor"] == marks["switch", "all"]


def test_deterministic_per_seed() -> None:
    cfg = replace(SMALL, chunk_bytes=64 << 10, mode="symphony")
    a, b, c = simulate(cfg, 4), simulate(cfg, 4), simulate(cfg, 5)
    assert a.stats == b.stats and a.cct_us == b.cct_us
    assert a.stats != c.stats


INCAST = [(a, 0, a % 4, 3000, 0) for a in range(1, 16)]  # 15 hosts -> host 0, 3000 packets each


def test_pfc_makes_an_overflowing_incast_lossless() -> None:
    # small buffers so that the 15:1 incast overflows the drop-tail queue before DCQCN reacts
    lossy = simulate(replace(NO_WIN, pfc=False, buffer_pkts=150), 0, flows=INCAST)
    assert lossy.stats["dropped"] > 1000
    cfg = replace(NO_WIN, pfc=True, switch_buffer_pkts=400)
    res = simulate(cfg, 0, flows=INCAST)
    conserved(res)
    st = res.stats
    assert st["dropped"] == 0 and st["out_of_order"] == 0 and st["pfc_pauses"] > 100
    assert st["delivered"] == len(INCAST) * 3000
    assert st["max_switch_buffer"] <= cfg.switch_buffer_pkts
    assert st["pfc_headroom_used"] <= cfg.headroom_pkts  # the reserved headroom sufficed
    # the receiver's downlink stayed busy: within 1 % of 45000 packets back to back
    assert res.cct_max_us < 1.01 * len(INCAST) * 3000 * SER_US


def test_pq_keeps_each_flow_in_one_class_so_nothing_reorders() -> None:
    cfg = replace(SMALL, chunk_bytes=256 << 10, mode="pq", pfc=False)
    res = simulate(cfg, 1)
    conserved(res)
    assert res.stats["out_of_order"] == 0 and res.stats["dropped"] == 0


def test_late_start_marks_nothing_before_it() -> None:
    cfg = replace(SMALL, chunk_bytes=256 << 10, mode="symphony", symphony=JobParams(k=1.0))
    early = simulate(cfg, 2)
    never = simulate(replace(cfg, late_start_us=1e9), 2)
    assert early.stats["symphony_marks"] > 100 and never.stats["symphony_marks"] == 0
    assert never.stats["events"] > 0 and never.stats["error"] == 0


@pytest.mark.parametrize("mode", ["baseline", "pq", "symphony"])
def test_pfc_pauses_cascade_without_deadlock_or_loss(mode: str) -> None:
    # a shared buffer of 150 packets gives XOFF thresholds of ~14 packets: pauses everywhere
    cfg = replace(
        NO_WIN,
        chunk_bytes=256 << 10,
        mode=mode,
        routing="static",
        imbalance=1.5,
        switch_buffer_pkts=150,
    )
    res = simulate(cfg, 0)
    conserved(res)  # error 0: neither the time cap nor a stuck job
    st = res.stats
    assert st["pfc_pauses"] > 20 and st["dropped"] == 0 and st["out_of_order"] == 0
    assert st["pfc_headroom_used"] <= cfg.headroom_pkts
    n_flows = cfg.rings * cfg.ring_size * cfg.steps
    assert st["delivered"] == n_flows * cfg.pkts_per_chunk


def test_a_run_too_large_for_an_arrive_payload_is_refused_by_name() -> None:
    # an ARRIVE event's payload names the packet in kernel.PK_BITS bits: a pool beyond that is
    # refused before anything is allocated, not run with packets aliasing each other
    cfg = FabricConfig(hosts=16, chunk_bytes=32 << 10, switch_buffer_pkts=1 << 28)
    with pytest.raises(ValueError, match=r"too large for the kernel: .* packets in flight"):
        simulate(cfg, 0)


def test_trace_io_records_every_arrival_after_its_send() -> None:
    """With trace_io, every data frame that reaches its receiver has a TR_RECV row (its PSN
    index, its CE bit) no earlier than its TR_SEND row plus the path's latency: the frames'
    queue waits flow_compare and the hosts' one-way delays are compared by."""
    from evaluation.fabric import kernel as kn

    packets = 200
    res = simulate(
        SMALL,
        0,
        flows=[(0, 5, 1, packets, 0), (1, 5, 1, packets, 0)],  # two senders into one port
        cc_trace_rows=20 * packets,
        trace_io=True,
    )
    assert res.stats["error"] == 0
    tr = res.cc_trace[: int((res.cc_trace[:, 2] != 0).sum())]
    hops = 4  # host 0 and 1 to host 5 cross a spine (conformance's trace flow takes this path)
    least_ps = hops * (SMALL.prop_ns * 1000 + SER_US * 1e6)
    waits = []
    for f in (0, 1):
        rows = tr[tr[:, 1] == f]
        sent = {int(r[6]): r[0] for r in rows if r[2] == kn.TR_SEND}
        got = rows[rows[:, 2] == kn.TR_RECV]
        assert sorted(int(i) for i in got[:, 6]) == list(range(packets))
        for r in got:
            assert r[0] - sent[int(r[6])] >= least_ps - 1
            waits.append(r[0] - sent[int(r[6])] - least_ps)
    assert max(waits) > 10 * SER_US * 1e6  # the shared port queued them


def _nic_order(flows: list[tuple[int, int, int, int, int]], frames: int) -> list[int]:
    """The flows of host 0's first `frames` data frames, in the order its NIC sent them."""
    from evaluation.fabric import kernel as kn

    res = simulate(SMALL, 0, flows=flows, cc_trace_rows=200_000, trace_io=True)
    assert res.stats["error"] == 0
    tr = res.cc_trace[: int((res.cc_trace[:, 2] != 0).sum())]
    sends = tr[tr[:, 2] == kn.TR_SEND]
    return [int(f) for f in sends[np.argsort(sends[:, 0], kind="stable"), 1][:frames]]


def test_a_nic_serves_its_flows_round_robin_in_creation_order() -> None:
    """HPCC's RdmaEgressQueue::GetNextQindex: after the QP it served last, the next one in its
    group (creation order) that may send now. Flows 0 and 1 alternate from t = 0; flow 2 starts
    during flow 1's first frame, so when that frame ends flow 2 is next after flow 1, although
    flow 0 was ready earlier (a queue of ready flows, the kernel before RESULTS_VERSION 4, sent
    flow 0 there). Each flow alone takes the line (10 Gb/s: one frame per frame time)."""
    ser_ps = round(SER_US * 1e6)
    order = _nic_order([(0, 5, 1, 50, 0), (0, 6, 1, 50, 0), (0, 7, 1, 50, ser_ps * 3 // 2)], 9)
    assert order == [0, 1, 2, 0, 1, 2, 0, 1, 2]


def test_a_flow_ready_at_the_instant_its_nic_frees_is_served() -> None:
    """A flow whose next send time is the instant the NIC finishes a frame counts as available
    then (HPCC compares m_nextAvail <= now): flow 1 starts exactly when flow 0's first frame
    ends and is served next, not flow 0 again. A guard of the rule only: here the event that
    makes flow 1 ready pops first, so the queue before RESULTS_VERSION 4 served it alike (the
    case it got wrong, a window reopened by an ACK at that instant, needs ns-3's own timing:
    docs/measurements/crossval-regimes-2026-12-07/pktdiff-before.txt)."""
    ser_ps = round(SER_US * 1e6)
    order = _nic_order([(0, 5, 1, 50, 0), (0, 6, 1, 50, ser_ps)], 4)
    assert order == [0, 1, 0, 1]


def test_same_instant_frames_are_ordered_as_ns3_orders_them() -> None:
    """The tie order (RESULTS_VERSION 5): ns-3's QbbNetDevice schedules TransmitComplete at
    every transmission start and pops same-instant events in the order they were scheduled.
    Host 4 sends flow 0's two frames from t = 0; flows 1 (host 4) and 2 (host 6), both to host
    5, start at 2 frame times, the instant host 4's NIC frees. Their start events were scheduled
    at set-up, before host 4's transmit-complete (scheduled at its second frame's start), so host
    4 is still busy when flow 1 starts: host 6's frame leaves first and reaches host 5 first.
    Version 4, which scheduled the transmit-complete only with a frame waiting, found host 4's
    NIC idle and sent flow 1 first (host 5's downlink then served them the other way round)."""
    from evaluation.fabric import kernel as kn

    ser_ps = round(SER_US * 1e6)
    flows = [(4, 7, 1, 2, 0), (4, 5, 1, 1, 2 * ser_ps), (6, 5, 1, 1, 2 * ser_ps)]
    res = simulate(SMALL, 0, flows=flows, cc_trace_rows=10_000, trace_io=True)
    assert res.stats["error"] == 0
    tr = res.cc_trace[: int((res.cc_trace[:, 2] != 0).sum())]
    got = tr[tr[:, 2] == kn.TR_RECV]
    into_5 = got[got[:, 1] != 0]
    assert [int(f) for f in into_5[np.argsort(into_5[:, 0], kind="stable"), 1]] == [2, 1]
    # one frame time apart: they met at host 5's downlink, not merely left in that order
    assert int(np.diff(np.sort(into_5[:, 0]))[0]) == ser_ps
