"""The NIC conformance suite: the fabric kernel's NIC equals the golden reaction point
(evaluation/nic/reaction_point.py) event for event under every profile, and the suite finds a
difference of one constant or one rule."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.fabric.dcqcn import DCQCN_PAPER, HPCC_CONFIG
from evaluation.nic.conformance import SUITE, TRACES, kernel_trace, replay
from evaluation.nic.reaction_point import TR_CUT, TR_INC, ReactionPoint

TRACE = {t.name: t for t in TRACES}


@pytest.mark.parametrize("trace", [t.name for t in TRACES])
@pytest.mark.parametrize("profile", sorted(SUITE))
def test_kernel_nic_equals_the_golden_one(profile: str, trace: str) -> None:
    assert replay(SUITE[profile], TRACE[trace]) == []


def test_the_traces_exercise_every_rule() -> None:
    # the suite compares something: under each rule set cuts and increases, the paper's hyper
    # increase (an rt step of more than R_AI), HPCC's window holding frames back
    for name in ("hpcc-config", "dcqcn-paper", "dcqcn-paper-b256k", "hpcc-config-clamp"):
        prof = SUITE[name]
        codes = set()
        for t in TRACES:
            codes |= set(kernel_trace(prof, t)[:, 2].astype(int).tolist())
        assert {TR_CUT, TR_INC, 6, 7} <= codes, name
    tr = kernel_trace(SUITE["dcqcn-paper-b256k"], TRACE["long-recovery"])
    inc = tr[tr[:, 2] == TR_INC]
    assert (inc[1:, 4] - inc[:-1, 4] > DCQCN_PAPER.ai_gbps + 1e-9).any()  # hyper increase
    tr = kernel_trace(HPCC_CONFIG, TRACE["long-recovery"])
    sends = tr[tr[:, 2] == 6]
    paced = 1024 * 8 / 10.0 * 1000  # ps between frames at line rate
    assert (sends[1:, 0] - sends[:-1, 0] > 2 * paced).any()  # a send the window held back


@pytest.mark.parametrize(
    "golden",
    [
        replace(HPCC_CONFIG, g=HPCC_CONFIG.g * 1.01),
        replace(HPCC_CONFIG, t_inc_us=HPCC_CONFIG.t_inc_us + 1),
        replace(HPCC_CONFIG, t_dec_us=HPCC_CONFIG.t_dec_us + 1),
        replace(HPCC_CONFIG, rules="dcqcn-paper"),
        replace(HPCC_CONFIG, var_win=False),
    ],
    ids=["g", "t_inc", "t_dec", "rules", "var_win"],
)
def test_a_golden_model_one_constant_off_is_caught(golden: object) -> None:
    assert replay(HPCC_CONFIG, TRACE["long-recovery"], golden=golden) != []  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "golden",
    [
        replace(SUITE["dcqcn-paper-b256k"], byte_counter_bytes=200 * 1024),
        replace(SUITE["dcqcn-paper-b256k"], fast_recovery=4),
        replace(SUITE["dcqcn-paper-b256k"], hai_gbps=0.3),
        replace(SUITE["dcqcn-paper-b256k"], rules="mellanox"),
    ],
    ids=["byte_counter", "fast_recovery", "hai", "rules"],
)
def test_the_papers_rules_one_constant_off_are_caught(golden: object) -> None:
    assert replay(SUITE["dcqcn-paper-b256k"], TRACE["long-recovery"], golden=golden) != []  # type: ignore[arg-type]


def test_papers_rules_cut_on_every_cnp_and_count_bytes() -> None:
    # the golden model itself, rule by rule (Zhu et al., Fig. 8 and 9)
    p = DCQCN_PAPER
    rp = ReactionPoint(p, 10.0)
    rp.on_cnp(0)
    assert rp.rc == 5.0 and rp.rt == 10.0 and rp.alpha == (1 - p.g) * 1.0 + p.g
    rp.on_cnp(1)  # a second CNP cuts again at once (no decrease period)
    assert rp.rc == 5.0 * (1 - rp.log[-1][4] / 2) or rp.rc < 5.0
    assert [r[1] for r in rp.log] == [TR_CUT, TR_CUT]
    # the byte counter: one increase per B bytes sent, fast recovery halves the gap to rt
    rc0 = rp.rc
    for _ in range(p.byte_counter_bytes // 1024):
        rp.on_sent(2, 1024)
    assert rp.bc_events == 1 and rp.rc == (rp.rt + rc0) / 2
    # at line rate the timer stops; the next cut restarts it
    rp.rc = rp.rt = 10.0
    rp.fire(rp.inc_due)  # type: ignore[arg-type]
    assert rp.inc_due is None
    rp.on_cnp(10**9)
    assert rp.inc_due == 10**9 + round(p.t_inc_us * 1e6)


def test_without_ack_frames_only_cnps_travel_back() -> None:
    # dcqcn-paper, as the bmv2 hosts: the receiver sends a frame (a CNP of 74 bytes) only for a
    # CE-marked packet, at most one per 50 us; the flow still completes (its progress reached the
    # sender out of band) and a windowed profile without ACK frames is refused
    from evaluation.fabric.config import FabricConfig
    from evaluation.fabric.sim import simulate

    assert not DCQCN_PAPER.ack_frames and DCQCN_PAPER.ack_bytes == 74
    res = simulate(
        FabricConfig(hosts=16, dcqcn=DCQCN_PAPER),
        0,
        flows=[(0, 5, 1, 3000, 0)],
        ce_psn={0: [100, 101, 2000]},
    )
    st = res.stats
    assert st["error"] == 0 and st["delivered"] == 3000
    assert st["acks"] == st["cnps"] == 2  # 100 and 2000 (101 within the CNP interval)
    with pytest.raises(ValueError, match="window needs ACK frames"):
        FabricConfig(dcqcn=replace(HPCC_CONFIG, ack_frames=False)).validate()
