"""DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015) for
the emulated hosts: the reaction point (sender rate control) and the notification point's CNP
pacing, in scaled time.

Time is scaled, not faked (docs/experiments.md): the switch's bottleneck runs at `line_pps`
packets per second instead of a 10 Gb/s link's ~1.1 M, so every time constant of the protocol is
multiplied by the same factor `scale = real packet rate / emulated packet rate`; byte counts stay
as they are (rate x time is invariant). Rates are in packets per second of the emulation.
"""

from __future__ import annotations

from dataclasses import dataclass

LINE_GBPS = 10.0  # the paper's testbed and simulation links


@dataclass(frozen=True)
class DcqcnConfig:
    """The protocol's constants in real units, from the DCQCN paper's parameter table; values the
    paper leaves open are marked ours. docs/experiments.md lists them with their source."""

    g: float = 1 / 256  # alpha EWMA gain
    alpha_timer_us: float = 55.0  # K: alpha decays after this long without a CNP
    increase_timer_us: float = 55.0  # T: rate-increase timer
    byte_counter: int = 10 * 1024 * 1024  # B: a rate-increase event per 10 MB sent
    fast_recovery: int = 5  # F: events spent in fast recovery
    r_ai_mbps: float = 40.0  # additive increase step
    r_hai_mbps: float = 400.0  # hyper increase step (ours: 10 x R_AI)
    min_rate_mbps: float = 10.0  # the NIC's floor (ours: 0.1 % of 10 Gb/s)
    cnp_interval_us: float = 50.0  # N: at most one CNP per QP per interval (receiver side)
    alpha_init: float = 1.0


@dataclass(frozen=True)
class Scaled:
    """DcqcnConfig in emulated units: seconds and packets per second at `line_pps`."""

    line_pps: float
    scale: float  # emulated seconds per real second of the 10 Gb/s link
    g: float
    alpha_timer_s: float
    increase_timer_s: float
    byte_counter: int
    fast_recovery: int
    r_ai: float
    r_hai: float
    min_rate: float
    cnp_interval_s: float
    alpha_init: float

    @classmethod
    def of(cls, cfg: DcqcnConfig, line_pps: float, frame_bytes: int) -> Scaled:
        real_pps = LINE_GBPS * 1e9 / 8 / frame_bytes
        scale = real_pps / line_pps
        per_mbps = line_pps / (LINE_GBPS * 1e3)  # emulated pps per real Mb/s
        return cls(
            line_pps=line_pps,
            scale=scale,
            g=cfg.g,
            alpha_timer_s=cfg.alpha_timer_us * 1e-6 * scale,
            increase_timer_s=cfg.increase_timer_us * 1e-6 * scale,
            byte_counter=cfg.byte_counter,
            fast_recovery=cfg.fast_recovery,
            r_ai=cfg.r_ai_mbps * per_mbps,
            r_hai=cfg.r_hai_mbps * per_mbps,
            min_rate=cfg.min_rate_mbps * per_mbps,
            cnp_interval_s=cfg.cnp_interval_us * 1e-6 * scale,
            alpha_init=cfg.alpha_init,
        )

    def scaled_us(self, real_us: float) -> float:
        """A real duration in microseconds, in emulated microseconds."""
        return real_us * self.scale


class ReactionPoint:
    """One QP's sending rate `rc` (packets/s). A CNP cuts it by alpha/2 and remembers the target
    `rt`; the timer and the byte counter each raise an event that brings `rc` back towards
    `rt` (fast recovery), then raise `rt` additively, then hyper-additively."""

    __slots__ = (
        "alpha",
        "bc_events",
        "bytes_since",
        "cnps",
        "next_alpha",
        "next_timer",
        "p",
        "rc",
        "rt",
        "timer_events",
    )

    def __init__(self, p: Scaled, now: float) -> None:
        self.p = p
        self.rc = self.rt = p.line_pps
        self.alpha = p.alpha_init
        self.timer_events = self.bc_events = 0
        self.bytes_since = 0
        self.cnps = 0
        self.next_alpha = now + p.alpha_timer_s
        self.next_timer = now + p.increase_timer_s

    def on_cnp(self, now: float) -> None:
        p = self.p
        self.cnps += 1
        self.rt = self.rc
        self.rc = max(p.min_rate, self.rc * (1 - self.alpha / 2))
        self.alpha = (1 - p.g) * self.alpha + p.g
        self.timer_events = self.bc_events = 0
        self.bytes_since = 0
        self.next_alpha = now + p.alpha_timer_s
        self.next_timer = now + p.increase_timer_s

    def on_sent(self, nbytes: int) -> None:
        self.bytes_since += nbytes
        if self.bytes_since >= self.p.byte_counter:
            self.bytes_since -= self.p.byte_counter
            self.bc_events += 1
            self._increase()

    def on_time(self, now: float) -> None:
        """Run the timers that expired by `now`."""
        p = self.p
        while now >= self.next_alpha:
            self.alpha *= 1 - p.g
            self.next_alpha += p.alpha_timer_s
        while now >= self.next_timer:
            self.timer_events += 1
            self.next_timer += p.increase_timer_s
            self._increase()

    def next_deadline(self) -> float:
        return min(self.next_alpha, self.next_timer)

    def _increase(self) -> None:
        p = self.p
        if self.rc >= p.line_pps and self.rt >= p.line_pps:
            return
        lo = min(self.timer_events, self.bc_events)
        hi = max(self.timer_events, self.bc_events)
        if hi < p.fast_recovery:
            pass  # fast recovery: only rc moves, halfway to rt
        elif lo > p.fast_recovery:
            self.rt += (lo - p.fast_recovery) * p.r_hai
        else:
            self.rt += p.r_ai
        self.rt = min(self.rt, p.line_pps)
        self.rc = min(p.line_pps, (self.rt + self.rc) / 2)
