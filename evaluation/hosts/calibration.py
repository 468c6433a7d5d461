"""The emulation sizes itself to the machine (docs/experiments.md, "Calibration").

A run is spoiled when the hosts' loop was late by more than the lateness limit (runs.judge),
half the shortest scaled DCQCN period, and that limit grows as the emulated packet rate falls
(time is scaled). What the machine gives is measured first: a few seconds of the experiment's
own traffic at the planned rate, through the switches, with every late send logged
(`nic.Fabric.late_log`). The late sends are grouped into stall episodes (a stall of the loop
makes a burst of late sends; the episode's size is its worst one), and the episodes are taken
as a Poisson process: `rate_over(x)` stalls larger than x per second of run.

An attempt of an experiment that lasts T seconds at the planned rate with limit L is spoiled
with probability p = 1 - exp(-rate_over(L / f) * T / f) at rate factor f (rates f x planned).
Lowering the rate is no cure on its own: runs get longer, so they meet more stalls, and only the
stalls the larger limit now tolerates stop counting. On the machines this was written on the
stalls came from outside (both cores stopped at once for 10-47 ms, about twice a minute, idle or
loaded alike), and the planned rates were the best ones; a machine whose own load delays the
loop by a few milliseconds is what a lower rate helps.

`plan` chooses the factor with the least expected wall time (loop time x attempts made per
valid run, 1 / (1 - p)), and as many attempts per cell as keep the expected number of cells
left without a valid attempt under FAIL_ODDS. A spoiled attempt costs its own time once; a lower
rate costs every run its factor, so where stalls come from outside a lower rate rarely pays
(here a target of 10 % spoiled would have cost 4 times the wall time). If even the best factor
needs more than `max_attempts`, the plan refuses: then nothing is run, and the message says what
was measured and what would be needed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

# A send later than this is logged (ms): below it the loop is on time for every rate in use (a
# packet gap at the fastest planned rate, 8000 packets/s offered, is 0.125 ms).
LOG_MIN_MS = 0.5
# Late sends closer than this (s) belong to one stall: the loop catches up within milliseconds.
# Stalls also come in bursts (on 2026-12-04 nine over 11 ms within 21 s, then one a minute),
# which a Poisson forecast over a short window overstates; the refusal's confidence bound and
# its further rounds (below) are what keeps a burst from stopping an experiment.
EPISODE_GAP_S = 0.05
# The refusal takes the stall rate at the lower end of its 95 % confidence interval (Poisson):
# a calibration of 20 s sees a few events at most, and refusing on an unlucky window would stop
# an experiment that would have run; the budget of attempts (and runs.Cells, which goes on
# measuring) works with the point estimate.
REFUSE_CONFIDENCE = 0.95
# A calibration that would refuse measures again, up to this many rounds in all, and decides on
# everything measured: a burst of stalls in the first round is not the machine's rule.
MAX_ROUNDS = 3
# The rate factors tried, highest first: the planned rates are the highest the docs measured
# bmv2 to sustain with headroom (docs/experiments.md), so the plan never goes above them; a
# quarter of them makes every run 4 times longer, the most an experiment's wall time may grow.
FACTORS = (1.0, 0.8, 0.64, 0.5, 0.4, 0.32, 0.25)
# Seconds of traffic measured before an experiment: a third of a minute. The stalls that spoiled
# runs on a quiet 2-core machine came about twice a minute, so a calibration of a few seconds
# mostly sees none of them; the attempts per cell never go below MIN_ATTEMPTS for that reason.
CALIBRATE_S = 20.0
# What a calibration that refuses says a machine must do: lose at most this fraction of attempts.
TARGET_SPOILED = 0.10
# Factors whose expected wall time is within this fraction of the least are a tie, won by the
# highest rate (the shortest runs, the least exposed to what the forecast did not see).
WALL_TIE = 0.05
FAIL_ODDS = 0.01  # the odds, at most, that some cell has no valid attempt
MIN_ATTEMPTS = 4  # never fewer than the harness always allowed (1 + 3 reruns)
MAX_ATTEMPTS = 12


@dataclass(frozen=True)
class Stalls:
    """What the calibration measured: the loop's late sends over `seconds` of traffic."""

    seconds: float  # loop time measured
    sends: int  # sends made in it
    line_pps: float  # the rate it ran at
    late_ms: tuple[float, ...]  # every send later than LOG_MIN_MS, in ms
    episodes_ms: tuple[float, ...]  # each stall's worst lateness, in ms

    @classmethod
    def of(
        cls, logs: Sequence[Sequence[tuple[float, float]]], seconds: float, sends: int, pps: float
    ) -> Stalls:
        """From the late-send logs of the calibration's runs: (loop time s, lateness s) each."""
        late: list[float] = []
        episodes: list[float] = []
        for log in logs:
            last_t = -math.inf
            for t, lag in sorted(log):
                late.append(lag * 1e3)
                if t - last_t > EPISODE_GAP_S:
                    episodes.append(lag * 1e3)
                else:
                    episodes[-1] = max(episodes[-1], lag * 1e3)
                last_t = t
        return cls(seconds, sends, pps, tuple(sorted(late)), tuple(sorted(episodes)))

    def rate_over(self, limit_ms: float, *, lower: float | None = None) -> float:
        """Stalls larger than `limit_ms` per second of run; with `lower` (a confidence), the
        lower end of that one-sided Poisson confidence interval instead."""
        n = sum(1 for e in self.episodes_ms if e > limit_ms)
        return (poisson_lower(n, lower) if lower is not None else n) / self.seconds

    def merged(self, other: Stalls) -> Stalls:
        """Both measurements as one (the calibration's rounds)."""
        return Stalls(
            self.seconds + other.seconds,
            self.sends + other.sends,
            self.line_pps,
            tuple(sorted(self.late_ms + other.late_ms)),
            tuple(sorted(self.episodes_ms + other.episodes_ms)),
        )

    def quantile_ms(self, q: float) -> float:
        """The q-quantile of every send's lateness (the sends not logged were < LOG_MIN_MS)."""
        rank = math.ceil(q * self.sends)  # 1-based rank from the bottom
        from_top = self.sends - rank  # how many sends are later than that one
        if from_top >= len(self.late_ms):
            return LOG_MIN_MS  # an upper bound: it was not logged
        return self.late_ms[len(self.late_ms) - 1 - from_top]

    def describe(self) -> str:
        worst = max(self.late_ms, default=0.0)
        big = ", ".join(f"{e:.1f}" for e in sorted(self.episodes_ms, reverse=True)[:8])
        return (
            f"{self.seconds:.1f} s of traffic at {self.line_pps:g} packets/s, {self.sends} sends:"
            f" lateness p99 {_le(self.quantile_ms(0.99))} ms, p99.9 {_le(self.quantile_ms(0.999))}"
            f" ms, worst {worst:.1f} ms; {len(self.episodes_ms)} stall(s) over {LOG_MIN_MS} ms"
            + (f" (largest: {big} ms)" if big else "")
        )


def _le(q: float) -> str:
    return f"<= {q:g}" if q == LOG_MIN_MS else f"{q:.2f}"


@dataclass(frozen=True)
class Demand:
    """One experiment of the invocation, at the planned rate."""

    name: str
    cells: int  # runs still to make
    attempt_s: float  # how long one attempt's loop runs at the planned rate
    limit_ms: float  # its lateness limit at the planned rate

    def spoiled(self, stalls: Stalls, factor: float, lower: float | None = None) -> float:
        """The predicted spoiled fraction of its attempts at `factor` x the planned rate (with
        `lower`, at the lower end of the stall rate's confidence interval)."""
        rate = stalls.rate_over(self.limit_ms / factor, lower=lower)
        return 1.0 - math.exp(-rate * self.attempt_s / factor)


@dataclass(frozen=True)
class Plan:
    factor: float  # every emulated rate is this times the planned one
    attempts: int  # per cell, at most (1 + reruns)
    spoiled: dict[str, float]  # predicted spoiled fraction per experiment
    refused: str | None = None  # why nothing should run
    tried: dict[float, dict[str, float]] = field(default_factory=dict)  # every factor's forecast

    def describe(self) -> str:
        text = (
            f"rate factor {self.factor:g} (every emulated rate x{self.factor:g}), up to"
            f" {self.attempts} attempts per cell; predicted spoiled fraction: "
            + ", ".join(f"{n} {p:.0%}" for n, p in self.spoiled.items())
        )
        return text + (f"; REFUSED: {self.refused}" if self.refused else "")


def measure(run: Callable[[int], dict[str, Any]], seconds: float, line_pps: float) -> Stalls:
    """Stalls over runs `run(n)` (n = 0, 1, ...) until `seconds` of loop time were measured;
    each row carries the run's late sends, loop time and sends (`_late`, `_loop_s`, `_sends`)."""
    logs, loop_s, sends = [], 0.0, 0
    while loop_s < seconds:
        row = run(len(logs))
        logs.append(row["_late"])
        loop_s += row["_loop_s"]
        sends += row["_sends"]
    return Stalls.of(logs, loop_s, sends, line_pps)


def measure_and_plan(
    measure: Callable[[], Stalls], planner: Callable[[Stalls], Plan]
) -> tuple[Stalls, Plan]:
    """One round of `measure`, planned; while the plan refuses, another round (MAX_ROUNDS in
    all), the plan made on everything measured."""
    stalls = measure()
    plan = planner(stalls)
    for _ in range(MAX_ROUNDS - 1):
        if plan.refused is None:
            break
        stalls = stalls.merged(measure())
        plan = planner(stalls)
    return stalls, plan


def record(stalls: Stalls, plan: Plan, factor: float) -> dict[str, Any]:
    """What the calibration measured and planned, for meta.json and the summary; `factor` the
    rate factor relative to the planned rates (the plan's, times the stored one on resume)."""
    return {
        "seconds": stalls.seconds,
        "measured_at_pps": stalls.line_pps,
        "sends": stalls.sends,
        "p99_ms": stalls.quantile_ms(0.99),
        "p999_ms": stalls.quantile_ms(0.999),
        "worst_ms": max(stalls.late_ms, default=0.0),
        "stalls_ms": list(stalls.episodes_ms),
        "factor": factor,
        "attempts": plan.attempts,
        "predicted_spoiled": plan.spoiled,
        "forecast": {str(k): v for k, v in plan.tried.items()},
        "refused": plan.refused,
        "text": f"{stalls.describe()}; plan: {plan.describe()}",
    }


def poisson_lower(n: int, confidence: float) -> float:
    """The lower end of the one-sided `confidence` interval of a Poisson mean, n counted: the
    mean m at which P(N >= n | m) = 1 - confidence (0 for n = 0)."""
    if n == 0:
        return 0.0

    def at_least_n(m: float) -> float:  # P(N >= n) = 1 - sum_{k<n} e^-m m^k / k!
        term, total = math.exp(-m), 0.0
        for k in range(n):
            total += term
            term *= m / (k + 1)
        return 1.0 - total

    lo, hi = 0.0, float(n)
    for _ in range(60):  # bisection: P(N >= n | m) grows with m
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if at_least_n(mid) < 1.0 - confidence else (lo, mid)
    return lo


def binomial_lower(k: int, n: int, confidence: float) -> float:
    """The lower end of the one-sided `confidence` interval (Clopper-Pearson) of a proportion,
    k of n: the p at which P(K >= k | n, p) = 1 - confidence (0 for k = 0)."""
    if k == 0:
        return 0.0

    def at_least_k(p: float) -> float:
        return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))

    lo, hi = 0.0, 1.0
    for _ in range(60):  # bisection: P(K >= k) grows with p
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if at_least_k(mid) < 1.0 - confidence else (lo, mid)
    return lo


def attempts_for(spoiled: Sequence[tuple[float, int]], fail_odds: float = FAIL_ODDS) -> int:
    """The fewest attempts per cell such that the expected number of cells with every attempt
    spoiled, sum(cells x p^attempts), is at most `fail_odds`; spoiled: (p, cells) each."""
    for a in range(MIN_ATTEMPTS, 1000):
        if sum(n * p**a for p, n in spoiled if n) <= fail_odds:
            return a
    return 1000


def plan(
    stalls: Stalls,
    demands: Sequence[Demand],
    *,
    max_attempts: int = MAX_ATTEMPTS,
    factors: Sequence[float] = FACTORS,
) -> Plan:
    """The rate factor and attempts per cell for `demands` on a machine that stalls as
    `stalls` says (the module's docstring): the factor with the least expected wall time, the
    highest of those within WALL_TIE of it."""
    tried = {f: {d.name: d.spoiled(stalls, f) for d in demands} for f in factors}

    def wall(f: float) -> float:  # loop time x attempts made per valid run
        return sum(d.cells * d.attempt_s / f / max(1e-9, 1.0 - tried[f][d.name]) for d in demands)

    def attempts(f: float) -> int:
        return attempts_for([(tried[f][d.name], d.cells) for d in demands])

    feasible = [f for f in factors if attempts(f) <= max_attempts] or list(factors)
    best = min(wall(f) for f in feasible)
    f = max(f for f in feasible if wall(f) <= best * (1 + WALL_TIE))
    a = attempts(f)
    optimistic = attempts_for(
        [(d.spoiled(stalls, f, lower=REFUSE_CONFIDENCE), d.cells) for d in demands]
    )
    refused = None
    if optimistic > max_attempts:
        worst = max(demands, key=lambda d: tried[f][d.name])
        refused = (
            f"this machine stalls the hosts' loop too often: {stalls.describe()}."
            f" At the best rate (x{f:g} the planned) {worst.name} would lose"
            f" {tried[f][worst.name]:.0%} of its attempts (limit {worst.limit_ms / f:.1f} ms,"
            f" {worst.attempt_s / f:.1f} s per attempt; at least"
            f" {worst.spoiled(stalls, f, lower=REFUSE_CONFIDENCE):.0%} with"
            f" {REFUSE_CONFIDENCE:.0%} confidence), needing {optimistic} or more attempts per"
            f" cell (at most {max_attempts}). It would need fewer than"
            f" {_needed_rate(worst, f):.3g} stalls over {worst.limit_ms / f:.1f} ms per second"
            " of run; quiet the machine (no other work, or a machine that is not paused by its"
            " host) and run again"
        )
    return Plan(f, min(a, max_attempts), tried[f], refused, tried)


def _needed_rate(d: Demand, f: float) -> float:
    """Stalls per second over the limit that would keep `d` at TARGET_SPOILED."""
    return -math.log(1.0 - TARGET_SPOILED) / (d.attempt_s / f)


def spoiled_fraction(valid_runs: int, spoiled_attempts: int) -> float:
    total = valid_runs + spoiled_attempts
    return spoiled_attempts / total if total else 0.0
