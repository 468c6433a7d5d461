"""The emulated hosts' DCQCN reaction point, rule by rule, and the time scaling."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from evaluation.hosts.dcqcn import DcqcnConfig, ReactionPoint, Scaled

P = Scaled.of(DcqcnConfig(), line_pps=2000.0, frame_bytes=1082)


def test_scaling_keeps_bytes_and_scales_every_timer_alike() -> None:
    real_pps = 10e9 / 8 / 1082
    assert P.scale == pytest.approx(real_pps / 2000)
    assert P.alpha_timer_s == pytest.approx(55e-6 * P.scale)
    assert P.increase_timer_s == pytest.approx(55e-6 * P.scale)
    assert P.cnp_interval_s == pytest.approx(50e-6 * P.scale)
    assert P.byte_counter == 10 * 1024 * 1024
    # 40 Mb/s of 10 Gb/s is 0.4 % of the line, whatever the scale.
    assert P.r_ai == pytest.approx(0.004 * 2000)


def test_cnp_cuts_by_alpha_half_and_raises_alpha() -> None:
    rp = ReactionPoint(P, 0.0)
    rp.on_cnp(0.0)
    assert rp.rc == pytest.approx(P.line_pps / 2)  # alpha starts at 1
    assert rp.rt == P.line_pps
    assert rp.alpha == pytest.approx(1.0)  # (1-g) * 1 + g
    rp.alpha = 0.5
    rp.on_cnp(0.0)
    assert rp.rc == pytest.approx(P.line_pps / 2 * 0.75)
    assert rp.alpha == pytest.approx(0.5 * (1 - P.g) + P.g)


def test_alpha_decays_without_cnp() -> None:
    rp = ReactionPoint(P, 0.0)
    rp.on_cnp(0.0)
    rp.on_time(3.5 * P.alpha_timer_s)
    assert rp.alpha == pytest.approx((1 - P.g) ** 3)


def test_recovery_fast_then_additive_then_capped() -> None:
    rp = ReactionPoint(P, 0.0)
    rp.on_cnp(0.0)
    target = rp.rt
    rates = []
    for i in range(1, P.fast_recovery):
        rp.on_time(i * P.increase_timer_s + 1e-9)
        rates.append(rp.rc)
        assert rp.rt == target  # fast recovery moves rc only
    assert rates == sorted(rates)
    assert target - rates[-1] == pytest.approx((target - P.line_pps / 2) / 2 ** len(rates))
    rp.rt = rp.rc = P.line_pps / 2  # pretend a second cut happened, then additive steps
    rp.timer_events = P.fast_recovery
    rp.next_timer = 0.0
    rp.on_time(1e-9)
    assert rp.rt == pytest.approx(P.line_pps / 2 + P.r_ai)
    for _ in range(10000):
        rp.next_timer = 0.0
        rp.on_time(1e-9)
    assert rp.rc == rp.rt == P.line_pps


def test_hyper_increase_needs_both_counters_past_f() -> None:
    rp = ReactionPoint(P, 0.0)
    rp.rt = rp.rc = 100.0
    rp.timer_events = rp.bc_events = P.fast_recovery + 1
    rp.bc_events -= 1
    rp.on_sent(P.byte_counter)  # the byte counter's event: both now past F
    assert rp.bc_events == P.fast_recovery + 1
    assert rp.rt == pytest.approx(100.0 + P.r_hai)


def test_rate_never_below_minimum() -> None:
    rp = ReactionPoint(P, 0.0)
    for _ in range(200):
        rp.on_cnp(0.0)
    assert rp.rc == pytest.approx(P.min_rate)
