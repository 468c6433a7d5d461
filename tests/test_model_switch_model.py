"""The golden model's per-packet algorithm (SPEC sections 1-4), rule by rule."""

from dataclasses import replace

import pytest

from symphony.model import arithmetic as ar
from symphony.model.opcodes import ACK, SEND_ONLY, WRITE_FIRST, WRITE_LAST, WRITE_MIDDLE
from symphony.model.params import T_WIN_MAX_TICKS, JobParams
from symphony.model.switch_model import (
    FLOW_SLOTS,
    JobState,
    RocePacket,
    SwitchModel,
    flow_slot,
    symphony_ce,
)

NEVER = 2_000_000_000.0  # a window longer than any test (33 minutes)
JOB = 7
HOST_A = 0x0A000001
HOST_B = 0x0A000002


def with_job(**params: object) -> SwitchModel:
    prm = JobParams(t_win_us=NEVER, n_warmup=4, n_sample=4).merged(dict(params))
    pl = SwitchModel()
    pl.install_job(JOB, prm.to_action_params(), tag=True)
    return pl


def pkt(opcode: int, step: int, psn: int, src: int = HOST_A, qp: int = 1, tag: int = JOB):
    return RocePacket(src=src, step=step, opcode=opcode, psn=psn, dqpn=qp, tag=tag)


def run_step(
    pl: SwitchModel,
    step: int,
    n: int,
    *,
    src: int = HOST_A,
    qp: int = 1,
    base: int = 0,
    last: bool = True,
    now: int = 0,
):
    """A flow's packets of one step: FIRST, MIDDLE..., [LAST]."""
    out = [pl.process(pkt(WRITE_FIRST, step, base, src, qp), now)]
    for i in range(1, n - 1):
        out.append(pl.process(pkt(WRITE_MIDDLE, step, base + i, src, qp), now))
    out.append(
        pl.process(pkt(WRITE_LAST if last else WRITE_MIDDLE, step, base + n - 1, src, qp), now)
    )
    return out


def test_untracked_traffic_changes_nothing() -> None:
    pl = with_job()
    assert not pl.process(pkt(WRITE_FIRST, 1, 0, tag=99), 0).tracked  # unknown tag
    assert not pl.process(pkt(ACK, 1, 0), 0).tracked  # not a data opcode
    assert pl.state(JOB) == JobState()


def test_hosts_mode_classifies_by_source() -> None:
    pl = SwitchModel()
    pl.install_job(9, JobParams().to_action_params(), tag=False, hosts=(HOST_B,))
    assert pl.process(pkt(WRITE_FIRST, 0, 0, src=HOST_B, tag=0), 0).job_id == 9
    assert pl.process(pkt(WRITE_FIRST, 0, 0, src=HOST_A, tag=0), 0).job_id is None
    # tag mode is not installed for job 9: its tag is unknown, the source still classifies it
    assert pl.process(pkt(WRITE_FIRST, 0, 0, src=HOST_B, tag=9), 0).job_id == 9


def test_last_advances_and_late_arrival_corrects() -> None:
    pl = with_job()
    run_step(pl, 3, 5)
    assert pl.state(JOB).step_min == 4 and pl.state(JOB).psn_rec == 0
    pl.process(pkt(WRITE_MIDDLE, 2, 9, src=HOST_B), 0)  # a lagging flow of step 2
    assert pl.state(JOB).step_min == 2
    assert pl.state(JOB).psn_rec == 0  # its p is unknown (no FIRST seen): stored as 0


def test_duplicates_leave_progress_unchanged() -> None:
    pl = with_job()
    run_step(pl, 0, 6, last=False)
    before = replace(pl.state(JOB))
    pl.process(pkt(WRITE_MIDDLE, 0, 5), 0)
    after = pl.state(JOB)
    assert (after.step_min, after.psn_rec) == (before.step_min, before.psn_rec)
    assert after.window_packets == before.window_packets + 1


def test_warmup_then_p1_marks_every_outpacing_packet() -> None:
    pl = with_job(k=255.0)  # k * alpha * p / psn_rec >= 1 for every p >= 1
    run_step(pl, 0, 4, last=False, src=HOST_B)  # lagging flow, psn_rec = 3 <= N_warmup = 4
    out = run_step(pl, 1, 4, last=False)
    assert [d.mark for d in out] == [False] * 4  # warm-up
    pl.process(pkt(WRITE_MIDDLE, 0, 4, src=HOST_B), 0)  # psn_rec = 4: still warm-up
    pl.process(pkt(WRITE_MIDDLE, 0, 5, src=HOST_B), 0)  # psn_rec = 5 > 4
    out = [pl.process(pkt(WRITE_MIDDLE, 1, 4 + i), 0) for i in range(5)]
    assert [d.mark for d in out] == [True] * 5
    # the lagging flow itself is never marked
    assert pl.process(pkt(WRITE_MIDDLE, 0, 6, src=HOST_B), 0).mark is False


def test_p0_never_marks() -> None:
    pl = with_job(k=0.0)
    run_step(pl, 0, 8, last=False, src=HOST_B)
    out = run_step(pl, 1, 8, last=False)
    assert all(d.mark is False and d.threshold == 0 for d in out)


def test_probability_follows_the_formula() -> None:
    pl = with_job(k=0.01)
    run_step(pl, 0, 101, last=False, src=HOST_B)  # psn_rec = 100
    run_step(pl, 1, 50, last=False)
    d = pl.process(pkt(WRITE_MIDDLE, 1, 50), 0)
    assert d.p == 50
    assert abs(d.probability / (0.01 * 1 * 50 / 100) - 1) < 0.03


def test_missed_first_is_never_marked() -> None:
    pl = with_job(k=255.0)
    run_step(pl, 0, 10, last=False, src=HOST_B)
    d = pl.process(pkt(WRITE_MIDDLE, 1, 500), 0)  # step 1, its FIRST never seen
    assert d.p is None and d.mark is False


def test_stale_flow_slot_from_previous_step_is_unknown() -> None:
    pl = with_job(k=255.0)
    run_step(pl, 0, 10, last=False, src=HOST_B)
    run_step(pl, 1, 3, last=True)  # flow A finished step 1; its slot holds step 1
    d = pl.process(pkt(WRITE_MIDDLE, 2, 3), 0)  # step 2 FIRST was lost
    assert d.p is None and d.mark is False


def test_psn_wraps_in_relative_mode() -> None:
    pl = with_job()
    base = ar.PSN_MASK - 2
    run_step(pl, 0, 8, base=base, last=False)
    assert pl.state(JOB).psn_rec == 7


def test_absolute_mode_uses_the_psn() -> None:
    pl = with_job(psn_mode="absolute")
    pl.process(pkt(WRITE_MIDDLE, 0, 1234), 0)
    assert pl.state(JOB).psn_rec == 1234


def test_step_wrap_is_one_step_later() -> None:
    pl = with_job()
    run_step(pl, 65535, 3)
    assert pl.state(JOB).step_min == 0
    d = pl.process(pkt(WRITE_FIRST, 0, 0), 0)
    assert pl.state(JOB).step_min == 0 and d.mark is False  # step 0 is the current step


def test_step_max_is_the_windows_highest_step_and_gives_the_overlap() -> None:
    pl = with_job()
    run_step(pl, 5, 3, last=False)  # the first packet of a fresh job sets step_max
    # A fresh job's step_min is 0 until a LAST packet (or an earlier step) moves it.
    assert (pl.state(JOB).step_max, pl.state(JOB).step_overlap) == (5, 6)
    run_step(pl, 4, 2, src=HOST_B, qp=4)  # step 4 completes: step_min 5
    assert (pl.state(JOB).step_min, pl.state(JOB).step_overlap) == (5, 1)
    run_step(pl, 7, 3, last=False, src=HOST_B)  # two steps ahead: a two-step misalignment
    st = pl.state(JOB)
    assert (st.step_min, st.step_max, st.step_overlap) == (5, 7, 3)
    pl.process(pkt(WRITE_MIDDLE, 6, 9, src=HOST_B, qp=2), 0)  # in between: no change
    assert pl.state(JOB).step_max == 7
    run_step(pl, 7, 3, src=HOST_B, qp=3)  # step 7 completes: step_min 8 passes step_max
    assert (pl.state(JOB).step_min, pl.state(JOB).step_overlap) == (8, 0)


def test_step_max_is_serial_across_the_wrap() -> None:
    pl = with_job()
    run_step(pl, 65534, 3, last=False)
    run_step(pl, 1, 3, last=False, src=HOST_B)  # 3 steps after 65534
    st = pl.state(JOB)
    assert (st.step_min, st.step_max, st.step_overlap) == (65534, 1, 4)
    pl.process(pkt(WRITE_MIDDLE, 65535, 9, src=HOST_B, qp=2), 0)  # serially earlier than 1
    assert pl.state(JOB).step_max == 1


def test_step_max_resets_with_the_window() -> None:
    pl = with_job()
    run_step(pl, 2, 2, qp=4)  # step_min 3
    run_step(pl, 3, 3, last=False)
    run_step(pl, 9, 3, last=False, src=HOST_B)
    assert (pl.state(JOB).step_max, pl.state(JOB).step_overlap) == (9, 7)
    pl.job_params[JOB]["t_win"] = 0  # the next packet closes the window, as for psn_rec
    pl.process(pkt(WRITE_MIDDLE, 3, 3), 1)
    st = pl.state(JOB)
    assert (st.step_min, st.step_max, st.step_overlap, st.psn_rec) == (3, 3, 1, 3)


def test_window_rollover_raises_lowers_and_guards_alpha() -> None:
    pl = with_job(tau=0.25, n_sample=4)
    prm = pl.job_params[JOB]
    run_step(pl, 0, 4, last=False, src=HOST_B)  # 4 lagging packets
    run_step(pl, 1, 4, last=False)  # 4 outpacing: 4/8 >= 0.25
    assert pl.state(JOB).psn_rec == 3
    prm["t_win"] = 0  # the next packet closes the window
    pl.process(pkt(WRITE_MIDDLE, 0, 1, src=HOST_B), 1)  # a retransmission, p = 1
    st = pl.state(JOB)
    # alpha rose; the counters restarted with this packet; psn_rec was reset, then took p = 1
    assert (st.alpha, st.window_packets, st.window_ahead_packets, st.psn_rec) == (2, 1, 0, 1)
    prm["t_win"] = 1 << 31
    for i in range(5):
        pl.process(pkt(WRITE_MIDDLE, 0, 5 + i, src=HOST_B), 1)
    prm["t_win"] = 0
    pl.process(pkt(WRITE_MIDDLE, 0, 10, src=HOST_B), 2)  # 0/6 outpacing: alpha - 1
    assert pl.state(JOB).alpha == 1
    pl.process(pkt(WRITE_MIDDLE, 0, 11, src=HOST_B), 3)  # 1 sample < N_sample: alone
    assert pl.state(JOB).alpha == 1
    for _ in range(3):  # never below 1
        pl.process(pkt(WRITE_MIDDLE, 0, 12, src=HOST_B), 4)
    assert pl.state(JOB).alpha == 1


def test_alpha_is_capped() -> None:
    pl = with_job(alpha_max=2, n_sample=1, tau=0.0)
    pl.job_params[JOB]["t_win"] = 0
    for t in range(6):
        pl.process(pkt(WRITE_MIDDLE, 0, 1), t)
    assert pl.state(JOB).alpha == 2


def test_two_jobs_are_isolated() -> None:
    pl = with_job()
    pl.install_job(8, JobParams().to_action_params(), tag=True)
    run_step(pl, 5, 4)
    assert pl.state(8) == JobState()
    pl.process(pkt(SEND_ONLY, 9, 0, tag=8), 0)
    assert pl.state(8).step_min == 10 and pl.state(JOB).step_min == 6


def test_register_encoding_round_trips() -> None:
    st = JobState(
        step_min=3,
        psn_rec=4,
        step_max=9,
        alpha=5,
        window_packets=6,
        window_ahead_packets=7,
        win_start=8,
    )
    raw = st.registers()
    assert raw["SymphonyIngress.job_state.alpha"] == 4  # stored minus one
    assert JobState.from_registers(raw) == st


def test_flow_slot_is_in_range_and_signed() -> None:
    slot, sig = flow_slot(HOST_A, 0x123456)
    assert 0 <= slot < FLOW_SLOTS and sig & 0x8000


# The Tofino2 variant (p4src/t2na) ---------------------------------------------------------


def test_tofino_variant_agrees_with_bmv2_on_every_scenario() -> None:
    """Run the same random sequences through both variants: identical state and decisions
    while windows are short and hold fewer than 2^23 packets."""
    import random

    rng = random.Random(3)
    for _ in range(30):
        params = JobParams(
            t_win_us=rng.choice([0.0, 50.0, 1e6]),
            tau=rng.choice([0.0, 0.25, 0.6875, 1.0]),
            n_sample=rng.choice([1, 3, 8]),
            n_warmup=2,
            alpha_max=rng.choice([1, 4, 16]),
            k=rng.choice([0.01, 1.0, 255.0]),
        ).to_action_params()
        b, t = SwitchModel(), SwitchModel(target="tofino2")
        for pl in (b, t):
            pl.install_job(JOB, params)
        now = 0
        for _ in range(200):
            now += rng.randint(0, 40)
            p = pkt(
                rng.choice([WRITE_FIRST, WRITE_MIDDLE, WRITE_MIDDLE, WRITE_LAST]),
                rng.randint(0, 3),
                rng.randint(0, 300),
                src=rng.choice([HOST_A, HOST_B]),
            )
            assert b.process(p, now) == t.process(p, now)
            assert b.state(JOB) == t.state(JOB)


def test_tofino_split_window_test_is_the_unsigned_test() -> None:
    """Tofino2's two serial tests equal SPEC 4.1's unsigned test for every gap while T_win < 2^31:
    at the edges of each test and across the 32-bit wrap, and on random operands."""
    import random

    t_max = T_WIN_MAX_TICKS
    edges = [0, 1, 99, 100, 101, (1 << 31) - 1, 1 << 31, (1 << 31) + 1, (1 << 32) - 1]
    for t_win in (0, 1, 100, 1 << 20, t_max - 1, t_max):
        for start in (0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFF0, 0xFFFFFFFF):
            for gap in [*edges, t_win - 1, t_win, t_win + 1, t_win + (1 << 31)]:
                now = (start + gap) & 0xFFFFFFFF
                assert ar.window_closes(now, start, t_win, split=True) == ar.window_closes(
                    now, start, t_win
                ), (now, start, t_win)
    rng = random.Random(11)
    for _ in range(100_000):
        now, start, t_win = rng.getrandbits(32), rng.getrandbits(32), rng.randint(0, t_max)
        assert ar.window_closes(now, start, t_win, split=True) == ar.window_closes(
            now, start, t_win
        )


def test_fresh_job_on_a_switch_up_longer_than_2_31_ticks_rolls_windows() -> None:
    """The repro of the defect the serial-only test had: a job installed after the tick counter
    passed 2^31 kept its first window open (alpha stuck at 1) until the counter wrapped."""
    params = JobParams(t_win_us=100 * 1.024, tau=0.0, n_sample=1).to_action_params(tick_ns=1024)
    assert params["t_win"] == 100
    for target in ("bmv2", "tofino2"):
        pl = SwitchModel(target=target)
        pl.install_job(JOB, params)
        alphas = []
        for i in range(4):
            pl.process(pkt(WRITE_MIDDLE, 0, 10 + i), 3 * (1 << 30) + 150 * i)
            alphas.append(pl.state(JOB).alpha)
        assert alphas == [1, 2, 3, 4], target
        assert pl.state(JOB).win_start == 3 * (1 << 30) + 450


def test_t_win_of_2_31_ticks_or_more_is_refused() -> None:
    """At 2^31 ticks the serial halves of the window test stop being exact: the bound is refused,
    on both targets, with the limit in the message."""
    for tick_ns in (1000, 1024):
        JobParams(t_win_us=T_WIN_MAX_TICKS * tick_ns / 1000).validate(tick_ns)
        with pytest.raises(ValueError, match=r"t_win_us: .* exceeds the window timer"):
            JobParams(t_win_us=(T_WIN_MAX_TICKS + 1) * tick_ns / 1000).validate(tick_ns)


def test_tau_off_the_1_256_grid_is_refused_with_the_nearest_values() -> None:
    with pytest.raises(ValueError, match=r"tau: must be a multiple of 1/256 .*got 0\.6;"):
        JobParams(tau=0.6).validate()
    with pytest.raises(ValueError, match=r"nearest: 0\.59765625 or 0\.6015625"):
        JobParams(tau=0.6).validate()
    assert JobParams(tau=154 / 256).to_action_params()["tau_q8"] == 154
    assert JobParams(tau=1.0).to_action_params()["tau_q8"] == 256


def test_tofino_running_eq5_equals_the_product_form() -> None:
    import random

    rng = random.Random(5)
    for _ in range(2000):
        total = rng.randint(1, 5000)
        op = rng.randint(0, total)
        tau_q8 = rng.randint(0, 256)
        score = op * ar.tau_increment(True, tau_q8) + (total - op) * ar.tau_increment(False, tau_q8)
        assert (score >= 0) == ar.window_raises_alpha(op, total, tau_q8)


def test_the_backlog_gate_lets_a_mark_leave_only_from_a_deep_enough_queue():
    # JobParams.gate_depth (issue 21), applied at egress on the depth the packet joins.
    assert symphony_ce(True, 0, 0) and symphony_ce(True, 7, 0)  # gate 0: the paper's policy
    assert not symphony_ce(True, 3, 4) and symphony_ce(True, 4, 4) and symphony_ce(True, 9, 4)
    assert not symphony_ce(False, 100, 0) and not symphony_ce(False, 100, 4)


def test_gate_depth_is_checked_and_becomes_action_data():
    assert JobParams().to_action_params()["sym_gate"] == 0
    assert JobParams(gate_depth=8).to_action_params()["sym_gate"] == 8
    for bad in (-1, 1 << 16, 2.5):
        with pytest.raises(ValueError, match="gate_depth"):
            JobParams(gate_depth=bad).validate()
