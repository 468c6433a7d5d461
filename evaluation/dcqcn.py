"""A simplified DCQCN reaction point (Zhu et al., SIGCOMM 2015), one per queue pair.

Rates are in packets per tick (1 tick = 1 us). What is kept: the multiplicative cut on a CNP
scaled by the alpha EWMA, alpha decay while no CNP arrives, and the timer-driven recovery
(fast recovery, then additive, then hyper increase). What is dropped: the byte counter (only
the timer drives increases) and rate limiter granularity.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DcqcnParams:
    line_rate: float  # packets per tick
    g: float = 1 / 16
    alpha_timer: int = 55  # ticks between alpha decays without a CNP
    increase_timer: int = 55  # ticks between rate increase events
    fast_stages: int = 5  # increase events spent in fast recovery before additive increase
    ai_frac: float = 0.01  # additive increase step, as a fraction of line rate
    hai_frac: float = 0.05  # hyper increase step, as a fraction of line rate
    min_frac: float = 0.005  # the NIC never goes below this fraction of line rate


class Dcqcn:
    """Current rate `rc` of one QP; the state persists across steps because a ring node keeps
    using the same QP to its successor, so a cut in step s still slows step s+1."""

    __slots__ = ("alpha", "incs", "next_alpha", "next_inc", "p", "rc", "rt")

    def __init__(self, p: DcqcnParams, now: int = 0) -> None:
        self.p = p
        self.rc = p.line_rate
        self.rt = p.line_rate
        self.alpha = 1.0
        self.incs = 0
        self.next_alpha = now + p.alpha_timer
        self.next_inc = now + p.increase_timer

    def on_cnp(self, now: int) -> None:
        p = self.p
        self.rt = self.rc
        self.rc = max(p.line_rate * p.min_frac, self.rc * (1 - self.alpha / 2))
        self.alpha = (1 - p.g) * self.alpha + p.g
        # A cut restarts both timers: recovery begins from the new rate.
        self.incs = 0
        self.next_alpha = now + p.alpha_timer
        self.next_inc = now + p.increase_timer

    def tick(self, now: int) -> None:
        p = self.p
        if now >= self.next_alpha:
            self.alpha *= 1 - p.g
            self.next_alpha = now + p.alpha_timer
        if now >= self.next_inc:
            self.incs += 1
            if self.incs > 2 * p.fast_stages:
                self.rt += p.line_rate * p.hai_frac * (self.incs - 2 * p.fast_stages)
            elif self.incs > p.fast_stages:
                self.rt += p.line_rate * p.ai_frac
            self.rt = min(self.rt, p.line_rate)
            self.rc = min(p.line_rate, (self.rt + self.rc) / 2)
            self.next_inc = now + p.increase_timer
