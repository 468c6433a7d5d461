"""The calibration's arithmetic (evaluation/hosts/calibration.py), without a switch: stall
episodes from late sends, the forecast of spoiled attempts, the plan's rate and attempts, and
the harness's attempt budget as it learns the spoiled fraction (runs.Cells)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from evaluation.hosts import calibration as cal
from evaluation.hosts import runs

LIMIT_MS = 7.2  # the two-flow test's limit at 4000 packets/s


def stalls(episodes_ms: list[float], seconds: float = 20.0, sends: int = 80_000) -> cal.Stalls:
    """Stalls of these sizes, one late send each, apart enough to be separate events."""
    log = [(2 * cal.EPISODE_GAP_S * i, e / 1e3) for i, e in enumerate(episodes_ms)]
    return cal.Stalls.of([log], seconds, sends, 4000.0)


def test_late_sends_close_together_are_one_stall_of_the_worst_size() -> None:
    burst = [(1.0, 0.030), (1.001, 0.0295), (1.002, 0.002)]  # one stall's backlog of sends
    later = [(1.0 + 2 * cal.EPISODE_GAP_S, 0.004)]
    s = cal.Stalls.of([burst + later], 10.0, 40_000, 4000.0)
    assert s.episodes_ms == pytest.approx((4.0, 30.0))
    assert len(s.late_ms) == 4
    assert s.rate_over(LIMIT_MS) == pytest.approx(0.1)  # one over 7.2 ms in 10 s
    assert s.rate_over(3.0) == pytest.approx(0.2)


def test_quantiles_count_the_sends_that_were_not_late() -> None:
    s = cal.Stalls.of([[(float(i), 0.002) for i in range(10)]], 10.0, 1000, 4000.0)
    assert s.quantile_ms(0.99) == cal.LOG_MIN_MS  # 10 late of 1000: p99 is an on-time send
    assert s.quantile_ms(0.995) == pytest.approx(2.0)


def test_the_forecast_is_a_poisson_chance_of_a_stall_over_the_limit() -> None:
    d = cal.Demand("exp 1", cells=100, attempt_s=5.0, limit_ms=LIMIT_MS)
    s = stalls([30.0, 30.0])  # 0.1 per second, all far over every limit in reach
    assert d.spoiled(s, 1.0) == pytest.approx(1 - math.exp(-0.1 * 5.0))
    # at half the rate the limit doubles (14.4 ms: still under 30) and attempts last twice as
    # long: more are spoiled, not fewer
    assert d.spoiled(s, 0.5) == pytest.approx(1 - math.exp(-0.1 * 10.0))
    assert d.spoiled(s, 0.25) > d.spoiled(s, 0.5)
    assert d.spoiled(stalls([]), 1.0) == 0.0


def test_a_quiet_machine_keeps_the_planned_rate_and_the_usual_attempts() -> None:
    p = cal.plan(stalls([1.0, 2.0]), [cal.Demand("exp 1", 100, 5.0, LIMIT_MS)])
    assert p.factor == 1.0 and p.attempts == cal.MIN_ATTEMPTS and p.refused is None
    assert p.spoiled == {"exp 1": 0.0}


def test_stalls_a_lower_rate_tolerates_lower_it_to_the_highest_rate_that_does() -> None:
    # 2 per second of 10 ms: over the limit at x1 (7.2 ms) and x0.8 (9 ms), under it at x0.64
    p = cal.plan(stalls([10.0] * 40), [cal.Demand("exp 1", 100, 5.0, LIMIT_MS)])
    assert p.factor == 0.64 and p.refused is None
    assert p.tried[1.0]["exp 1"] > 0.99


def test_stalls_no_rate_tolerates_mean_more_attempts_at_the_quickest_rate() -> None:
    # 0.05 per second of 40 ms (the quiet VM's): no factor in reach lifts the limit over them
    d = cal.Demand("exp 1", 125, 6.0, LIMIT_MS)
    p = cal.plan(stalls([40.0]), [d])
    assert p.factor == 1.0  # lower rates only lengthen the runs
    assert p.spoiled["exp 1"] > cal.TARGET_SPOILED
    q = p.spoiled["exp 1"]
    assert 125 * q**p.attempts <= cal.FAIL_ODDS < 125 * q ** (p.attempts - 1)
    assert p.refused is None


def test_the_refusal_takes_the_optimistic_end_of_the_stall_rate() -> None:
    # two stalls in 20 s: the point estimate (0.1/s) would need more than 12 attempts for 125
    # cells of 9 s, the lower end of the 95 % interval (0.018/s) does not: no refusal
    d = cal.Demand("exp 2", 125, 9.0, 11.6)
    p = cal.plan(stalls([60.0, 60.0]), [d])
    assert p.refused is None and p.attempts == cal.MAX_ATTEMPTS
    assert cal.poisson_lower(2, 0.9) == pytest.approx(0.532, abs=1e-3)  # chi2(0.1, 4) / 2
    assert cal.poisson_lower(2, 0.95) == pytest.approx(0.355, abs=1e-3)  # chi2(0.05, 4) / 2
    assert cal.poisson_lower(0, 0.9) == 0.0


def test_a_refusing_calibration_measures_again_and_decides_on_everything() -> None:
    rounds = iter([stalls([60.0] * 6, seconds=20.0), stalls([], seconds=20.0)] * 2)
    d = cal.Demand("exp 2", 20, 9.0, 11.6)
    measured, p = cal.measure_and_plan(lambda: next(rounds), lambda st: cal.plan(st, [d]))
    assert measured.seconds == 40.0 and p.refused is None  # the burst diluted by a quiet round
    bad = iter([stalls([60.0] * 10, seconds=20.0)] * 5)
    measured, p = cal.measure_and_plan(lambda: next(bad), lambda st: cal.plan(st, [d]))
    assert measured.seconds == 20.0 * cal.MAX_ROUNDS and p.refused is not None


def test_a_machine_that_spoils_most_attempts_is_refused_with_the_figures() -> None:
    p = cal.plan(stalls([60.0] * 20), [cal.Demand("exp 1", 125, 6.0, LIMIT_MS)])
    assert p.refused is not None
    assert "stalls" in p.refused and "attempts per cell" in p.refused and "60.0" in p.refused


def test_attempts_for_meets_the_fail_odds() -> None:
    assert cal.attempts_for([(0.0, 100)]) == cal.MIN_ATTEMPTS
    a = cal.attempts_for([(0.3, 100), (0.1, 20)])
    assert 100 * 0.3**a + 20 * 0.1**a <= cal.FAIL_ODDS < 100 * 0.3 ** (a - 1) + 20 * 0.1 ** (a - 1)


# -- the budget as the attempts are made (runs.Cells) ----------------------------------------
def row(lag_ms: float) -> dict:
    return {"complete": True, "max_lag_ms": lag_ms, "send_errors": 0, "lost_unattributed": 0}


def test_cells_grow_the_attempts_when_the_machine_spoils_more_than_forecast(
    tmp_path: Path,
) -> None:
    cells = runs.Cells(tmp_path, None)
    cells.expect("exp 1", 100, 0.0)
    assert cells.attempts("exp 1") == cal.MIN_ATTEMPTS
    lags = iter([50.0] * 6 + [1.0])  # six spoiled attempts, then a valid one
    got = cells.run("exp 1", "cell a", lambda n: row(next(lags)), LIMIT_MS)
    assert got is not None and got["reruns"] == 6  # past the 4 a fixed budget would allow
    assert cells.unresolved == []
    assert cells.attempts("exp 1") > cal.MIN_ATTEMPTS


def test_cells_with_a_fixed_budget_give_up_after_it(tmp_path: Path) -> None:
    cells = runs.Cells(tmp_path, 1)
    got = cells.run("exp 1", "cell a", lambda n: row(50.0), LIMIT_MS)
    assert got is None and len(cells.unresolved) == 1
    assert "no valid run in 2 attempts" in cells.unresolved[0]


def test_a_cell_made_valid_later_is_no_longer_unresolved(tmp_path: Path) -> None:
    """The fabric experiment tries a cell again after the others (a burst of stalls passes):
    its valid run then clears the first round's failure, and only that cell's."""
    cells = runs.Cells(tmp_path, 1)
    assert cells.run("fabric", "k=0.01 seed 10", lambda n: row(50.0), LIMIT_MS) is None
    assert cells.run("fabric", "k=0.01 seed 101", lambda n: row(50.0), LIMIT_MS) is None
    assert cells.run("fabric", "k=0.01 seed 10", lambda n: row(1.0), LIMIT_MS) is not None
    assert [u.split(":")[0] for u in cells.unresolved] == ["fabric k=0.01 seed 101"]


def test_cells_never_allow_more_than_the_most_attempts(tmp_path: Path) -> None:
    cells = runs.Cells(tmp_path, None)
    cells.expect("exp 1", 100, 0.5)
    assert cells.needed("exp 1") > cal.MAX_ATTEMPTS
    assert cells.attempts("exp 1") == cal.MAX_ATTEMPTS


def test_cells_stop_the_invocation_when_no_budget_would_do(tmp_path: Path) -> None:
    """Every attempt spoiled, far past the forecast: once the evidence is in, the harness stops
    with the figures instead of grinding through every cell's attempts."""
    cells = runs.Cells(tmp_path, None)
    cells.expect("exp 1", 100, 0.0)
    made = []
    with pytest.raises(runs.TooManySpoiled, match=r"exp 1: 30 of 30 attempts spoiled"):
        for cell in range(100):
            cells.run("exp 1", f"cell {cell}", lambda n: made.append(n) or row(50.0), LIMIT_MS)
    assert len(made) == runs.Cells.EVIDENCE
    assert len(runs.read_rows(tmp_path / "spoiled_runs.csv")) == runs.Cells.EVIDENCE


def test_a_burst_of_spoiled_attempts_does_not_stop_the_invocation(tmp_path: Path) -> None:
    """Every other attempt spoiled, a forecast of one in two: more than 10 attempts made and
    the lower end of the spoiled fraction's interval leaves a budget of 12 enough, so the
    harness goes on."""
    cells = runs.Cells(tmp_path, None)
    cells.expect("exp 1", 100, 0.5)
    lags = iter([50.0, 1.0] * 15 + [1.0] * 100)
    for cell in range(20):
        assert cells.run("exp 1", f"cell {cell}", lambda n: row(next(lags)), LIMIT_MS) is not None
    assert cal.binomial_lower(15, 30, 0.95) == pytest.approx(0.339, abs=2e-3)


def test_a_fixed_budget_never_stops_early(tmp_path: Path) -> None:
    cells = runs.Cells(tmp_path, 0)
    for cell in range(20):
        assert cells.run("exp 1", f"cell {cell}", lambda n: row(50.0), LIMIT_MS) is None
    assert len(cells.unresolved) == 20


def test_reruns_are_preferred_to_a_much_slower_rate_when_they_cost_less() -> None:
    # 0.05 per second of 20 ms: x0.32 (limit 22.5 ms) would spoil nothing but run 3 times
    # longer; at x1 a fifth of the attempts are spoiled and rerun, which costs less
    d = cal.Demand("exp 1", 100, 5.0, LIMIT_MS)
    p = cal.plan(stalls([20.0]), [d])
    assert p.tried[0.32]["exp 1"] == 0.0
    assert p.factor == 1.0 and 0.2 < p.spoiled["exp 1"] < 0.25
