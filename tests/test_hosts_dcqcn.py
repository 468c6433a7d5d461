"""The emulated hosts' NIC: the golden reaction point in scaled time, rule by rule, and the
profiles the hosts accept."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluation.fabric.dcqcn import DCQCN_PAPER, PROFILES
from evaluation.hosts.dcqcn import DEFAULT_PROFILE, ReactionPoint, Scaled, host_profile

P = Scaled.of(DCQCN_PAPER, line_pps=2000.0, frame_bytes=1082)
PPS_PER_GBPS = 2000.0 / 10.0


def test_scaling_keeps_bytes_and_scales_every_timer_alike() -> None:
    real_pps = 10e9 / 8 / 1082
    assert P.scale == pytest.approx(real_pps / 2000)
    assert P.alpha_timer_s == pytest.approx(55e-6 * P.scale)
    assert P.increase_timer_s == pytest.approx(55e-6 * P.scale)
    assert P.cnp_interval_s == pytest.approx(50e-6 * P.scale)
    assert P.timer_s == pytest.approx(50e-6 * P.scale)
    assert P.ps(P.seconds(123_456_789)) == 123_456_789


def test_the_hosts_run_the_dcqcn_papers_nic_by_default() -> None:
    assert host_profile(DEFAULT_PROFILE) is DCQCN_PAPER


@pytest.mark.parametrize("name", list(PROFILES))
def test_the_hosts_run_every_profile_by_name(name: str) -> None:
    assert host_profile(name) is PROFILES[name]


def test_an_unknown_profile_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown NIC profile 'nope'; known: hpcc-config"):
        host_profile("nope")


def test_cnp_cuts_by_alpha_half_in_packets_per_second() -> None:
    rp = ReactionPoint(P, 0.0)
    rp.on_cnp(0.0)
    assert rp.rc == pytest.approx(P.line_pps / 2)  # alpha starts at 1
    assert rp.rt == P.line_pps
    assert rp.cnps == 1


def test_alpha_decays_on_the_scaled_timer() -> None:
    rp = ReactionPoint(P, 0.0)
    rp.on_cnp(0.0)
    a0 = rp.alpha
    rc = rp.rc
    rp.on_time(3.5 * P.alpha_timer_s)
    rc = rp.rc  # three fast-recovery steps on the increase timer (T = K) meanwhile
    rp.on_cnp(3.5 * P.alpha_timer_s)  # alpha: three decays, then the CNP's rise
    g = DCQCN_PAPER.g
    decayed = a0 * (1 - g) ** 3
    assert rp.rc == pytest.approx(rc * (1 - decayed / 2))
    assert rp.alpha == pytest.approx((1 - g) * decayed + g)


def test_recovery_on_the_scaled_increase_timer() -> None:
    rp = ReactionPoint(P, 0.0)
    rp.on_cnp(0.0)
    assert rp.next_deadline() == pytest.approx(P.increase_timer_s)
    rp.on_time(P.increase_timer_s * 1.0001)
    assert rp.rc == pytest.approx((P.line_pps + P.line_pps / 2) / 2)  # fast recovery
    for k in range(2, 200):
        rp.on_time(k * P.increase_timer_s * 1.0001)
    assert rp.rc == rp.rt == P.line_pps
    assert rp.next_deadline() == float("inf")  # at line rate the timer stops


def test_byte_counter_counts_frames_sent() -> None:
    rp = ReactionPoint(P, 0.0)
    rp.on_cnp(0.0)
    rc = rp.rc
    for _ in range(DCQCN_PAPER.byte_counter_bytes // 1082 + 1):
        rp.on_sent(1e-9, 1082)
    assert rp.golden.bc_events == 1 and rp.rc == pytest.approx((P.line_pps + rc) / 2)


def test_rate_never_below_minimum() -> None:
    rp = ReactionPoint(P, 0.0)
    for i in range(2000):
        rp.on_cnp(i * 1e-9)
    assert rp.rc == pytest.approx(DCQCN_PAPER.min_gbps * PPS_PER_GBPS)


def test_the_loops_lateness_limit_is_the_shortest_timer_acting_on_the_rate() -> None:
    # alpha's ticks are lazy and exact: HPCC's 1 us alpha timer does not bound the loop, its
    # 4 us decrease check does
    hpcc = Scaled.of(PROFILES["hpcc-config"], 1000.0, 1082)
    assert hpcc.timer_s == pytest.approx(4e-6 * hpcc.scale)
    assert P.timer_s == pytest.approx(50e-6 * P.scale)  # dcqcn-paper: the CNP interval
