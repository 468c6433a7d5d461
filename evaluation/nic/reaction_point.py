"""One queue pair's sender: DCQCN's reaction point, its pacing and its window, under a profile's
rules (`evaluation.fabric.dcqcn.Dcqcn`). This is the NIC's golden model: the emulated hosts run
it as it is (`evaluation/hosts/nic.py`, in their scaled time) and the fabric kernel's numba copy
is held equal to it, event by event, by `evaluation/nic/conformance.py`.

Two rule sets, by the profile's `rules`:

- ``"mellanox"``: HPCC's ns-3 `rdma-hw.cc` in CC_MODE 1. A CNP (an ACK with the flag) only sets
  flags; `UpdateAlphaMlx` runs every t_alpha from the first CNP on (alpha rises if a CNP came in
  its window, else decays), `CheckRateDecreaseMlx` every t_dec cuts once if a CNP came, and the
  rate-increase timer (restarted by every cut) moves through fast recovery, additive and hyper
  increase by one stage counter. No byte counter. The first CNP sets alpha = 1 and the rate to
  `rate_on_first_cnp` of itself, without a cut.
- ``"dcqcn-paper"``: the DCQCN paper (Zhu et al., SIGCOMM 2015, Fig. 8 and 9). Every CNP cuts at
  once (rt = rc, rc *= 1 - alpha / 2, then alpha = (1 - g) alpha + g) and restarts the alpha
  timer (alpha decays by 1 - g every t_alpha without a CNP, from the QP's creation), the
  increase timer (every t_inc) and the byte counter (every `byte_counter_bytes` sent); each of
  the two counts its events since the cut, and an event increases by the smaller and larger
  count: fast recovery while both are below F, hyper increase by (min - F) x HAI once both exceed
  F, additive otherwise.

Time is integer picoseconds (the kernel's unit; the hosts convert their scaled seconds), rates
Gb/s. Lazy timers are evaluated exactly as the kernel evaluates them: alpha's decays by
`(1 - g) ** k` when something reads alpha, the increase timer as one pending deadline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evaluation.fabric.dcqcn import Dcqcn

PS_PER_US = 1_000_000
# cc_trace event codes, shared with the kernel (kernel.TR_*): the golden model logs the same rows
TR_FIRST_CNP, TR_CUT, TR_INC, TR_CNP = 1, 2, 3, 4


@dataclass
class ReactionPoint:
    """DCQCN's sender state of one QP. `log` gets a row (t, code, rc, rt, alpha, stage) at every
    rate event, the rows the kernel writes to its cc_trace."""

    profile: Dcqcn
    line_gbps: float
    rc: float = 0.0
    rt: float = 0.0
    alpha: float = 1.0
    stage: int = 0  # mellanox: m_rpTimeStage; dcqcn-paper: increase-timer events since the cut
    bc_events: int = 0  # dcqcn-paper: byte-counter events since the cut
    bc_bytes: int = 0  # dcqcn-paper: bytes sent since the last byte-counter event
    cnps: int = 0
    alpha_next: int = -1  # next alpha tick; mellanox: -1 before the first CNP
    alpha_flag: bool = False  # mellanox: a CNP came since the last alpha tick
    dec_flag: bool = False  # mellanox: a CNP came since the last decrease check
    dec_next: int = -1  # mellanox: the decrease-check grid
    dec_due: int | None = None  # mellanox: a decrease check that will act (after a CNP)
    inc_due: int | None = None  # the increase timer's next event; None: not running
    log: list[tuple[int, int, float, float, float, int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        p = self.profile
        self.rc = self.rt = self.line_gbps
        self.t_alpha = round(p.t_alpha_us * PS_PER_US)
        self.t_dec = round(p.t_dec_us * PS_PER_US)
        self.t_inc = round(p.t_inc_us * PS_PER_US)
        self.paper = p.rules == "dcqcn-paper"
        if self.paper:
            self.alpha = p.alpha_init
            self.alpha_next = self.t_alpha  # the alpha timer runs from the QP's creation (t = 0)

    # -- inputs --------------------------------------------------------------------------------
    def on_cnp(self, now: int) -> None:
        """A CNP (HPCC: an ACK carrying the flag) reached the sender at `now`."""
        self.cnps += 1
        if self.paper:
            self._paper_cnp(now)
        else:
            self._mlx_cnp(now)

    def on_sent(self, now: int, nbytes: int) -> None:
        """A frame of `nbytes` left the NIC (the byte counter's input)."""
        p = self.profile
        if not self.paper or p.byte_counter_bytes <= 0:
            return
        self.bc_bytes += nbytes
        if self.bc_bytes >= p.byte_counter_bytes:
            self.bc_bytes -= p.byte_counter_bytes
            self.bc_events += 1
            self._paper_increase(now)

    def advance(self, now: int) -> None:
        """Run every timer event due at or before `now`, in time order."""
        while True:
            due = self.next_deadline()
            if due is None or due > now:
                return
            self.fire(due)

    def next_deadline(self) -> int | None:
        """The next time a timer acts (a lazily evaluated alpha tick is not an event)."""
        d, i = self.dec_due, self.inc_due
        if d is None:
            return i
        return d if i is None or d < i else i

    def fire(self, now: int) -> None:
        """The timer event due at `now` (the decrease check before the increase timer)."""
        if self.dec_due == now:
            self._mlx_decrease(now)
        elif self.inc_due == now:
            if self.paper:
                self.inc_due = now + self.t_inc
                self.stage += 1
                self._paper_increase(now)
            else:
                self._mlx_increase(now)
        else:
            raise ValueError(f"no timer is due at {now} ps")

    # -- pacing and window (RATE_BOUND, IsWinBound with GetWin) --------------------------------
    def gap_ps(self, mtu: int) -> int:
        """The pacing gap after a frame of `mtu` bytes at the current rate (UpdateNextAvail)."""
        return int(mtu * 8 / self.rc * 1000.0)

    def window_bytes(self, win: int) -> int:
        """The window under VAR_WIN (scaled by rc / line, at least 1 byte); 0: none."""
        if win == 0 or not self.profile.var_win:
            return win
        return max(1, int(win * self.rc / self.line_gbps))

    # -- the rules -----------------------------------------------------------------------------
    def _row(self, now: int, code: int) -> None:
        self.log.append((now, code, self.rc, self.rt, self.alpha, self.stage))

    def _alpha_ticks(self, now: int) -> None:
        """Alpha's timer ticks due by `now` (kernel._alpha_ticks / _alpha_decay)."""
        if self.alpha_next < 0 or self.alpha_next > now:
            return
        k = (now - self.alpha_next) // self.t_alpha + 1
        self.alpha_next += k * self.t_alpha
        g = self.profile.g
        if self.alpha_flag:  # mellanox: the first tick sees the CNP of its window
            self.alpha = (1.0 - g) * self.alpha + g
            self.alpha_flag = False
            k -= 1
        if k > 0:
            self.alpha *= _powi(1.0 - g, k)

    def _mlx_cnp(self, now: int) -> None:
        self._alpha_ticks(now)
        self.alpha_flag = self.dec_flag = True
        if self.alpha_next < 0:  # m_first_cnp
            self.alpha = 1.0
            self.alpha_flag = False
            self.alpha_next = now + self.t_alpha
            self.dec_next = now + self.t_dec + 1000  # + 1 ns: after the alpha tick
            self.rc = self.profile.rate_on_first_cnp * self.rc
            self.rt = self.rc
            self._row(now, TR_FIRST_CNP)
        else:
            self._row(now, TR_CNP)
        if self.dec_due is None:
            if self.dec_next <= now:
                self.dec_next += ((now - self.dec_next) // self.t_dec + 1) * self.t_dec
            self.dec_due = self.dec_next

    def _mlx_decrease(self, now: int) -> None:
        p = self.profile
        self.dec_due = None
        self.dec_next = now + self.t_dec
        if not self.dec_flag:
            return
        self._alpha_ticks(now)
        if p.clamp_target_rate or self.stage != 0:
            self.rt = self.rc
        self.rc = max(p.min_gbps, self.rc * (1.0 - self.alpha / 2.0))
        self.stage = 0
        self.dec_flag = False
        self._row(now, TR_CUT)
        self.inc_due = now + self.t_inc  # the RP timer restarts

    def _mlx_increase(self, now: int) -> None:
        p = self.profile
        self.inc_due = now + self.t_inc
        if self.stage < p.fast_recovery:
            pass  # FastRecoveryMlx
        elif self.stage == p.fast_recovery:
            self.rt = min(self.rt + p.ai_gbps, self.line_gbps)  # ActiveIncreaseMlx
        else:
            self.rt = min(self.rt + p.hai_gbps, self.line_gbps)  # HyperIncreaseMlx
        self.rc = self.rc / 2.0 + self.rt / 2.0
        self.stage += 1
        self._row(now, TR_INC)

    def _paper_cnp(self, now: int) -> None:
        p = self.profile
        self._alpha_ticks(now)
        self.rt = self.rc
        self.rc = max(p.min_gbps, self.rc * (1.0 - self.alpha / 2.0))
        self.alpha = (1.0 - p.g) * self.alpha + p.g
        self.stage = self.bc_events = self.bc_bytes = 0
        self.alpha_next = now + self.t_alpha
        self.inc_due = now + self.t_inc
        self._row(now, TR_CUT)

    def _paper_increase(self, now: int) -> None:
        """An increase event (the timer's or the byte counter's). At line rate there is nothing
        to increase: the timer stops until the next cut restarts it (its counts are reset
        there, so no later decision depends on the events it skips)."""
        p = self.profile
        line = self.line_gbps
        if self.rc >= line and self.rt >= line:
            self.inc_due = None
            return
        lo = min(self.stage, self.bc_events)
        hi = max(self.stage, self.bc_events)
        if hi < p.fast_recovery:
            pass  # fast recovery: rc halfway to rt
        elif lo > p.fast_recovery:
            self.rt += (lo - p.fast_recovery) * p.hai_gbps
        else:
            self.rt += p.ai_gbps
        self.rt = min(self.rt, line)
        self.rc = min(line, (self.rt + self.rc) / 2.0)
        self._row(now, TR_INC)


def _powi(a: float, k: int) -> float:
    """`a ** k` as the kernel's numba computes a float to an integer power (squaring, not C's
    pow), so that both give the same bits."""
    if k > 0x10000:
        return math.pow(a, float(k))
    r = 1.0
    while k:
        if k & 1:
            r *= a
        k >>= 1
        a *= a
    return r
