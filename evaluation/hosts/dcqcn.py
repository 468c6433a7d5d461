"""The emulated hosts' NIC rules: the golden reaction point (`evaluation/nic/reaction_point.py`)
run as it is, in the emulation's scaled time and packet rates.

Time is scaled, not faked (docs/experiments.md): the switch's bottleneck runs at `line_pps`
packets per second instead of a 10 Gb/s link's ~1.1 M, so every time constant of the protocol is
multiplied by the same factor `scale = real packet rate / emulated packet rate`; byte counts stay
as they are (rate x time is invariant). The golden model keeps real picoseconds and Gb/s; this
module converts at its boundary: emulated seconds / scale -> real time, Gb/s -> packets per second
of the emulation. The profile is one of `evaluation.fabric.dcqcn.PROFILES`, the same the fabric
simulator runs by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from evaluation.fabric.dcqcn import DCQCN_PAPER, PROFILES, Dcqcn
from evaluation.nic.reaction_point import ReactionPoint as Golden

LINE_GBPS = 10.0  # the paper's testbed and simulation links
DEFAULT_PROFILE = DCQCN_PAPER.name  # the hosts' NIC: rate only, the DCQCN paper's rules


def host_profile(name: str | Dcqcn) -> Dcqcn:
    """A profile by name for the emulated hosts. They run every one: rate-only ones with CNP
    frames, HPCC's with an ACK frame per data packet (BECN as the CNP flag) and its window."""
    p = name if isinstance(name, Dcqcn) else PROFILES.get(name)
    if p is None:
        raise ValueError(f"unknown NIC profile {name!r}; known: {', '.join(PROFILES)}")
    return p


@dataclass(frozen=True)
class Scaled:
    """A profile at the emulation's scale: `line_pps` packets per second stand for 10 Gb/s."""

    profile: Dcqcn
    line_pps: float
    scale: float  # emulated seconds per real second of the 10 Gb/s link

    @classmethod
    def of(cls, profile: Dcqcn, line_pps: float, frame_bytes: int) -> Scaled:
        real_pps = LINE_GBPS * 1e9 / 8 / frame_bytes
        return cls(profile=profile, line_pps=line_pps, scale=real_pps / line_pps)

    def scaled_us(self, real_us: float) -> float:
        """A real duration in microseconds, in emulated microseconds."""
        return real_us * self.scale

    @property
    def alpha_timer_s(self) -> float:
        return self.profile.t_alpha_us * 1e-6 * self.scale

    @property
    def increase_timer_s(self) -> float:
        return self.profile.t_inc_us * 1e-6 * self.scale

    @property
    def cnp_interval_s(self) -> float:
        return self.profile.cnp_interval_us * 1e-6 * self.scale

    @property
    def timer_s(self) -> float:
        """The shortest timer that acts on the rate (the lateness the loop may allow): the
        increase timer, Mellanox's decrease check, the CNP interval. Not alpha's timer: the
        golden model evaluates its ticks lazily at their own times, so a late loop changes
        nothing of alpha (HPCC's t_alpha is 1 us, a quarter of the decrease check's)."""
        p = self.profile
        ts = [p.t_inc_us] + ([p.t_dec_us] if p.rules == "mellanox" else [])
        ts += [p.cnp_interval_us] if p.cnp_interval_us > 0 else []
        return min(ts) * 1e-6 * self.scale

    def ps(self, t: float) -> int:
        """Emulated seconds as the golden model's real picoseconds."""
        return round(t / self.scale * 1e12)

    def seconds(self, ps: int) -> float:
        return ps * 1e-12 * self.scale


class ReactionPoint:
    """One QP's reaction point in the hosts' units: `rc` in packets per second of the emulation,
    times in emulated seconds. The rules are the golden model's (`golden`)."""

    __slots__ = ("golden", "p", "to_pps")

    def __init__(self, p: Scaled, now: float) -> None:
        self.p = p
        self.golden = Golden(p.profile, LINE_GBPS)
        self.to_pps = p.line_pps / LINE_GBPS
        assert now == 0.0, "a QP's reaction point starts with the run (the golden model's t = 0)"

    @property
    def rc(self) -> float:
        return self.golden.rc * self.to_pps

    @property
    def rt(self) -> float:
        return self.golden.rt * self.to_pps

    @property
    def alpha(self) -> float:
        return self.golden.alpha

    @property
    def cnps(self) -> int:
        return self.golden.cnps

    def on_cnp(self, now: float) -> None:
        t = self.p.ps(now)
        self.golden.advance(t - 1)  # timers due before the CNP first
        self.golden.on_cnp(t)

    def on_sent(self, now: float, nbytes: int) -> None:
        t = self.p.ps(now)
        self.golden.advance(t - 1)
        self.golden.on_sent(t, nbytes)

    def window_bytes(self, win: int) -> int:
        """The window at the current rate (VAR_WIN), bytes; 0: none."""
        return self.golden.window_bytes(win)

    def on_time(self, now: float) -> None:
        """Run the timers that expired by `now`."""
        self.golden.advance(self.p.ps(now))

    def next_deadline(self) -> float:
        due = self.golden.next_deadline()
        return math.inf if due is None else self.p.seconds(due)
