"""The fabric kernel's NIC follows HPCC's rdma-hw.cc in CC_MODE 1 (Mellanox DCQCN). Each test
names the rdma-hw.cc function or behaviour it mirrors and drives the real numba kernel with a
tiny workload: `ce_psn` makes the sender's NIC CE-mark chosen packets, `cc_trace_rows` records
every DCQCN event of the senders (kernel.TR_*)."""

from __future__ import annotations

import math
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.fabric import kernel as kn
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.dcqcn import HPCC_CONFIG, HPCC_RUN_DCQCN, PROFILES, Dcqcn, bdp_bytes
from evaluation.fabric.sim import FabricResult, simulate

SMALL = FabricConfig(hosts=16)
ONE_FLOW = [(0, 5, 1, 3000, 0)]  # host 0 (ToR 0) -> host 5 (ToR 1) through spine 1
US = 1_000_000  # ps
T, FLOW, EV, RC, RT, ALPHA, STAGE, FLY = range(8)


def run(
    cc: Dcqcn | str,
    ce: dict[int, list[int]] | None = None,
    flows: list[tuple[int, int, int, int, int]] = ONE_FLOW,
    **cfg: object,
) -> FabricResult:
    res = simulate(replace(SMALL, dcqcn=cc, **cfg), 0, flows=flows, ce_psn=ce, cc_trace_rows=50_000)
    st = res.stats
    assert st["error"] == 0
    assert st["acks"] == st["acks_received"] + st["acks_dropped"] + st["acks_left_in_flight"]
    assert res.cc_trace.shape[0] < 50_000
    return res


def rows(res: FabricResult, f: int = 0, ev: int | None = None) -> np.ndarray:
    tr = res.cc_trace[res.cc_trace[:, FLOW] == f]
    return tr if ev is None else tr[tr[:, EV] == ev]


def test_profiles_are_declared_once_and_resolve_by_name() -> None:
    assert set(PROFILES) >= {"hpcc-config", "astra-config", "hpcc-run-dcqcn", "dcqcn-paper"}
    assert FabricConfig().cc is PROFILES["hpcc-config"]
    assert replace(SMALL, dcqcn="hpcc-run-dcqcn").cc.t_inc_us == 300.0
    with pytest.raises(ValueError):
        replace(SMALL, dcqcn="nope").validate()
    # HPCC's BDP for a cross-spine path of 1 us, 10 Gb/s links and 1000 B packets (third.cc)
    assert bdp_bytes(4, 1000, 10.0, 1000) == 14000


def test_every_packet_is_acked_and_the_ce_packets_ack_carries_the_cnp_flag() -> None:
    # ReceiveUdp / ReceiverCheckSeq with L2_ACK_INTERVAL 1: one ACK per in-order packet
    res = run(HPCC_RUN_DCQCN, ce={0: [100]})
    st = res.stats
    assert st["acks"] == st["delivered"] == 3000 and st["nacks"] == 0
    assert st["cnps"] == 1 and st["ce_delivered"] == 1


def test_single_ce_mark_gives_one_cut_at_the_next_decrease_check() -> None:
    # cnp_received_mlx (first CNP: alpha = 1, timers start) then CheckRateDecreaseMlx 4 us + 1 ns
    # later, with alpha after four UpdateAlphaMlx ticks without a CNP: (1 - g)^4
    cc = HPCC_RUN_DCQCN
    res = run(cc, ce={0: [100]})
    assert res.stats["rate_cuts"] == 1
    first = rows(res, ev=kn.TR_FIRST_CNP)
    cut = rows(res, ev=kn.TR_CUT)
    assert len(first) == 1 and len(cut) == 1
    assert cut[0, T] == first[0, T] + cc.t_dec_us * US + 1000
    assert cut[0, ALPHA] == pytest.approx((1 - cc.g) ** 4, rel=1e-12)
    assert cut[0, RC] == pytest.approx(10.0 * (1 - cut[0, ALPHA] / 2), rel=1e-12)
    assert cut[0, RT] == 10.0  # a cut in stage 0 leaves the target (CLAMP_TARGET_RATE 0)


def test_two_cnps_in_one_window_give_one_cut() -> None:
    # CheckRateDecreaseMlx cuts once per check whatever the number of CNPs since the last one;
    # the second CNP falls in the first 1 us alpha window: alpha = (1-g)*1 + g, then 3 decays
    cc = HPCC_RUN_DCQCN
    res = run(cc, ce={0: [100, 101]})
    assert res.stats["cnps"] == 2 and res.stats["rate_cuts"] == 1
    assert rows(res, ev=kn.TR_CUT)[0, ALPHA] == pytest.approx((1 - cc.g) ** 3, rel=1e-12)


def alpha_reference(tr: np.ndarray, g: float, t_alpha_ps: int) -> list[float]:
    """UpdateAlphaMlx run tick by tick: alpha at every cut of one flow's trace."""
    t0 = tr[tr[:, EV] == kn.TR_FIRST_CNP][0, T]
    cnps = sorted(tr[tr[:, EV] == kn.TR_CNP][:, T])
    out, alpha, tick, i = [], 1.0, t0 + t_alpha_ps, 0
    for t_cut in tr[tr[:, EV] == kn.TR_CUT][:, T]:
        while tick <= t_cut:
            seen = False
            while i < len(cnps) and cnps[i] < tick:  # a CNP at a tick's instant counts later
                seen, i = True, i + 1
            alpha = (1 - g) * alpha + g if seen else (1 - g) * alpha
            tick += t_alpha_ps
        out.append(alpha)
    return out


def test_alpha_rises_by_g_in_each_window_with_a_cnp_and_decays_otherwise() -> None:
    # UpdateAlphaMlx: free-running every ALPHA_RESUME_INTERVAL from the first CNP on. A lone
    # mark, a gap, then dense marking (every packet; MIN_RATE = line rate keeps one packet in
    # every 1 us window): alpha first decays, then climbs towards 1.
    cc = replace(HPCC_RUN_DCQCN, min_gbps=10.0)
    ce = [100, *range(400, 1400)]
    res = run(cc, ce={0: ce})
    tr = rows(res)
    cuts = tr[tr[:, EV] == kn.TR_CUT]
    assert len(cuts) > 50
    ref = alpha_reference(tr, cc.g, round(cc.t_alpha_us * US))
    np.testing.assert_allclose(cuts[:, ALPHA], ref, rtol=1e-9)
    assert cuts[1, ALPHA] < 0.9  # decayed over the gap
    assert cuts[-1, ALPHA] > 0.9  # dense marking: +g per 1 us window


def check_transitions(res: FabricResult, cc: Dcqcn, f: int) -> set[str]:
    """Every recorded event of flow f obeys its rdma-hw.cc rule; returns the rules seen."""
    tr = rows(res, f)
    seen: set[str] = set()
    prev = np.array([0, f, 0, 10.0, 10.0, 1.0, 0, 0])
    timer = None  # time of the last cut or increase: the RP timer's phase
    t_inc = round(cc.t_inc_us * US)
    for r in tr:
        ev = int(r[EV])
        if ev == kn.TR_FIRST_CNP:
            assert r[RC] == pytest.approx(cc.rate_on_first_cnp * prev[RC]) and r[ALPHA] == 1.0
            assert r[RT] == r[RC]
        elif ev in (kn.TR_CNP, kn.TR_DONE):
            # a CNP only sets the flags: no stage reset, no skipped increase
            assert (r[RC], r[RT], r[STAGE]) == (prev[RC], prev[RT], prev[STAGE])
        elif ev == kn.TR_CUT:
            clamp = cc.clamp_target_rate or prev[STAGE] != 0
            seen.add("cut, target clamped" if clamp else "cut in stage 0, target kept")
            assert r[RT] == (prev[RC] if clamp else prev[RT])
            assert r[RC] == pytest.approx(max(cc.min_gbps, prev[RC] * (1 - r[ALPHA] / 2)))
            assert r[STAGE] == 0
            timer = r[T]
        elif ev == kn.TR_INC:
            assert timer is not None and r[T] == timer + t_inc  # RP_TIMER after a cut or inc
            timer = r[T]
            st = prev[STAGE]
            if st < cc.fast_recovery:
                seen.add("fast recovery")
                assert r[RT] == prev[RT]
            elif st == cc.fast_recovery:
                seen.add("active increase")
                assert r[RT] == pytest.approx(min(prev[RT] + cc.ai_gbps, 10.0))
            else:
                seen.add("hyper increase")
                assert r[RT] == pytest.approx(min(prev[RT] + cc.hai_gbps, 10.0))
            assert r[RC] == pytest.approx(prev[RC] / 2 + r[RT] / 2)
            assert r[STAGE] == st + 1
        prev = r
    return seen


FOUR_ON_ONE_UPLINK = [(a, 4 + a, 0, 15_000, 0) for a in range(4)]


@pytest.mark.parametrize("clamp", [False, True])
def test_stages_and_the_target_clamp_follow_rate_inc_event_mlx(clamp: bool) -> None:
    # RateIncEventTimerMlx / RateIncEventMlx (FastRecoveryMlx, ActiveIncreaseMlx,
    # HyperIncreaseMlx by m_rpTimeStage vs FAST_RECOVERY_TIMES) and CheckRateDecreaseMlx's
    # target clamp, on four flows sharing one uplink (no window: DCQCN does the sharing)
    cc = replace(HPCC_RUN_DCQCN, t_inc_us=55.0, clamp_target_rate=clamp)
    res = run(cc, flows=FOUR_ON_ONE_UPLINK)
    assert res.stats["rate_cuts"] > 20
    seen: set[str] = set()
    for f in range(4):
        seen |= check_transitions(res, cc, f)
    assert {"fast recovery", "active increase", "hyper increase"} <= seen
    assert ("cut, target clamped" in seen) and (clamp or "cut in stage 0, target kept" in seen)


def test_rp_timer_runs_while_the_flow_does_not_send() -> None:
    # RateIncEventTimerMlx reschedules itself, whether or not the QP sends: here the first CNP
    # drops the rate to 10 Mb/s (RateOnFirstCnp 0.001), so the next packet waits 819 us, and
    # the 50 us RP timer raises the rate 16 times meanwhile (fly_max 0: nothing sent)
    cc = replace(
        HPCC_RUN_DCQCN, rate_on_first_cnp=0.001, min_gbps=0.0001, t_inc_us=50.0, ai_gbps=0.5
    )
    res = run(cc, ce={0: [100]}, flows=[(0, 5, 1, 200, 0)])
    tr = rows(res)
    incs = tr[tr[:, EV] == kn.TR_INC]
    idle = 0
    for r in incs:
        idle = idle + 1 if r[FLY] == 0 else 0
        if idle >= 10:
            break
    assert idle >= 10
    check_transitions(res, cc, 0)


def test_the_window_caps_in_flight_bytes_with_var_win_scaling() -> None:
    # IsWinBound / GetWin: in flight < win before a send; VAR_WIN: win * rate / line rate.
    # hpcc-config's window on this fabric: the cross-spine BDP of 1 KiB packets
    win = bdp_bytes(4, SMALL.prop_ns, SMALL.link_gbps, SMALL.mtu)
    res = run(HPCC_CONFIG)
    assert rows(res, ev=kn.TR_DONE)[0, FLY] == math.ceil(win / SMALL.mtu)  # 14 packets
    assert 3000 * SMALL.mtu * 8 / (res.cct_us[0] * 1000) > 0.99 * SMALL.link_gbps
    # at a quarter of line rate (first CNP, no cut for 1 s) the window is a quarter
    cc = replace(HPCC_CONFIG, rate_on_first_cnp=0.25, t_dec_us=1e6)
    res = run(cc, ce={0: [100]})
    first, done = rows(res, ev=kn.TR_FIRST_CNP)[0], rows(res, ev=kn.TR_DONE)[0]
    assert first[FLY] == math.ceil(win / SMALL.mtu)
    assert done[FLY] == math.ceil(int(win * 0.25) / SMALL.mtu)  # 4 packets


def test_the_window_shares_a_bottleneck_without_marks() -> None:
    # with hpcc-config's window four flows through one uplink hold ~4 BDPs in flight, below
    # RED's K_min: the window does the sharing, no CNP
    res = run(HPCC_CONFIG, flows=FOUR_ON_ONE_UPLINK)
    assert res.stats["cnps"] == 0 and res.stats["dropped"] == 0
    done = res.flow_done_us
    assert done.min() > 0.95 * done.max()
    win_pkts = math.ceil(bdp_bytes(4, SMALL.prop_ns, SMALL.link_gbps, SMALL.mtu) / SMALL.mtu)
    assert all(rows(res, f)[:, FLY].max() == win_pkts for f in range(4))  # the window binds
    no_win = run(HPCC_RUN_DCQCN, flows=FOUR_ON_ONE_UPLINK)
    assert no_win.stats["cnps"] > 50  # without it, DCQCN does the sharing
    assert max(rows(no_win, f)[:, FLY].max() for f in range(4)) > win_pkts


def test_nacks_carry_the_cnp_flag_and_trigger_go_back_n() -> None:
    # ReceiverCheckSeq: a gap gives a NACK (once per expected PSN, or again after 500 us),
    # flagged like an ACK if the packet was CE; ReceiveAck + RecoverQueue: snd_nxt = snd_una.
    # A lossy incast (PFC off, 150-packet queues) whose every packet is CE-marked.
    incast = [(a, 0, a % 4, 600, 0) for a in range(1, 16)]
    ce = {f: list(range(600)) for f in range(15)}
    res = run(HPCC_RUN_DCQCN, ce=ce, flows=incast, pfc=False, buffer_pkts=150)
    st = res.stats
    assert st["dropped"] > 0 and st["nacks"] > 0 and st["delivered"] == 15 * 600
    assert st["cnps"] == st["acks"]  # every ACK and NACK carried the flag
    assert st["nacks"] < st["out_of_order"]  # not one per out-of-order packet
    assert (
        st["sent"]
        == st["delivered"]
        + st["out_of_order"]
        + st["duplicate"]
        + st["dropped"]
        + st["left_in_flight"]
    )


@pytest.mark.parametrize("ack_queue", ["data", "control"])
def test_acks_travel_the_reverse_path_in_either_switch_queue(ack_queue: str) -> None:
    # ACKs in the flow's data queue (HPCC: SwitchNode AckHighPrio 0) or a control class; with
    # PFC on and a small buffer both stay lossless, and every ACK reaches its sender
    cc = replace(HPCC_RUN_DCQCN, ack_queue=ack_queue)
    incast = [(a, 0, a % 4, 1000, 0) for a in range(1, 16)]
    res = run(cc, flows=incast, switch_buffer_pkts=400)
    st = res.stats
    assert st["dropped"] == 0 and st["acks_dropped"] == 0 and st["pfc_pauses"] > 0
    assert st["acks"] == st["delivered"] == 15 * 1000


def test_bmv2s_ack_class_takes_none_of_datas_port_time() -> None:
    # The emulation's model (fabric_experiment.sim_config): ACKs cost a data frame's time. Host
    # 0 receives a flow (8 -> 0) on its ToR port and sends one (0 -> 5) whose ACKs come back
    # through that port. In a strict-priority class sharing the port ("control") the ACKs take
    # the port's time and the flow into host 0 slows; in bmv2's priority queue, rated on its
    # own ("control-bmv2"), they take none: that flow ends exactly as when it runs alone.
    into_0, out_of_0 = (8, 0, 0, 1000, 0), (0, 5, 1, 1000, 0)
    done = {}
    for q in ("data", "control", "control-bmv2"):
        cc = replace(HPCC_RUN_DCQCN, ack_queue=q, ack_bytes=SMALL.mtu)
        alone = run(cc, flows=[into_0]).flow_done_us[0]
        both = run(cc, flows=[into_0, out_of_0])
        assert both.stats["acks"] == 2000 and both.stats["acks_dropped"] == 0
        done[q] = both.flow_done_us[0] / alone
    assert done["control-bmv2"] == 1.0
    assert done["control"] > 1.5 and done["data"] > 1.5


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_every_profile_runs_a_small_ring_deterministically(name: str) -> None:
    cfg = replace(SMALL, chunk_bytes=64 << 10, dcqcn=name)
    a, b = simulate(cfg, 3), simulate(cfg, 3)
    assert a.stats == b.stats and a.cct_us == b.cct_us and a.stats["error"] == 0
