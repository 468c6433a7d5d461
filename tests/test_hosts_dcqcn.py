"""The emulated hosts' NIC: the golden reaction point in scaled time, rule by rule, and the
profiles the hosts accept."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluation.fabric.dcqcn import DCQCN_PAPER, HPCC_RUN_DCQCN
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
    # rate-only Mellanox rules would do, without the ACK per packet
    assert host_profile(replace(HPCC_RUN_DCQCN, ack_frames=False)).rules == "mellanox"


@pytest.mark.parametrize("name", ["hpcc-config", "astra-config", "hpcc-run-dcqcn"])
def test_a_profile_with_ack_frames_is_refused_with_the_reason(name: str) -> None:
    with pytest.raises(ValueError, match=r"(window|every packet).*no ACK frames"):
        host_profile(name)
    with pytest.raises(ValueError, match="unknown NIC profile"):
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
