"""The NIC conformance suite: the fabric kernel's NIC held equal to the golden one
(`reaction_point.py`), profile by profile, event by event.

A trace is one flow on a small fabric with chosen packets CE-marked at its sender (so the marks,
not the network, decide when CNPs come). The kernel runs it with every NIC event traced
(`simulate(..., trace_io=True)`): each data frame sent, each ACK/NACK received (with its CNP
flag), each rate event. The golden reaction point is then fed the kernel's inputs (the ACKs and
CNPs at the times they reached the sender, the frames at the times they left) and must produce:

- the same rate events (first CNP, CNP, cut, increase) at the same picoseconds with the same
  rc, rt, alpha and stage, bit for bit (floats compared with ==);
- the same sends: every frame no earlier than the previous one plus the pacing gap at the rate
  it left at, never while the window is full, and later than the gap only when the window held
  it and an ACK arriving at that instant opened it.

Ties: events of one picosecond run in the kernel's order (its event queue's, not a NIC rule):
the golden model's timers due at the instant of an input run first only if the kernel's trace
shows their row first.

    python -m evaluation.nic.conformance            # every trace under every profile
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace

import numpy as np

from evaluation.fabric import kernel as kn
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.dcqcn import PROFILES, Dcqcn
from evaluation.fabric.sim import flow_windows, simulate
from evaluation.nic.reaction_point import TR_CNP, TR_CUT, TR_FIRST_CNP, TR_INC, ReactionPoint

T, FLOW, EV, RC, RT, ALPHA, A, B = range(8)
RATE_EVENTS = (TR_FIRST_CNP, TR_CUT, TR_INC, TR_CNP)
FABRIC = FabricConfig(hosts=16)


@dataclass(frozen=True)
class Trace:
    """One flow of `packets` from host 0 to host 5 (across a spine), the PSN indices in `ce`
    CE-marked by the sender's NIC."""

    name: str
    packets: int
    ce: tuple[int, ...]
    why: str


TRACES = (
    Trace("one-mark", 3000, (100,), "a single CNP: the first-CNP rule, one cut, recovery"),
    Trace("two-marks", 3000, (100, 101), "two CNPs back to back: one decrease window"),
    Trace("mark-run", 4000, tuple(range(200, 260)), "60 marks in a row: alpha climbs"),
    Trace(
        "periodic",
        6000,
        tuple(range(300, 6000, 400)),
        "a mark every 400 packets: cuts during recovery",
    ),
    Trace(
        "long-recovery",
        64000,
        tuple(range(100, 700, 100)),
        "six cuts 100 packets apart, then recovery over 60 MB: additive and hyper increase, "
        "the byte counter, the timer stopping at line rate",
    ),
)


# Profiles of the suite's own, beside the named ones, for rules the named ones reach only in
# traces too long to replay: the paper's hyper increase needs F + 1 byte-counter events (60 MB at
# B = 10 MB), here 1.5 MB; and HPCC's rules with the target rate clamped at every cut.
EXTRA_PROFILES = (
    replace(PROFILES["dcqcn-paper"], name="dcqcn-paper-b256k", byte_counter_bytes=256 * 1024),
    replace(PROFILES["hpcc-config"], name="hpcc-config-clamp", clamp_target_rate=True),
)
SUITE = {**PROFILES, **{p.name: p for p in EXTRA_PROFILES}}


@dataclass
class Mismatch:
    trace: str
    profile: str
    row: int
    what: str

    def __str__(self) -> str:
        return f"{self.profile} / {self.trace}, kernel row {self.row}: {self.what}"


def kernel_trace(profile: Dcqcn, trace: Trace, cfg: FabricConfig = FABRIC) -> np.ndarray:
    """The kernel's trace of the one flow (its rows in the kernel's order)."""
    res = simulate(
        replace(cfg, dcqcn=profile),
        0,
        flows=[(0, 5, 1, trace.packets, 0)],
        ce_psn={0: list(trace.ce)},
        cc_trace_rows=8 * trace.packets + 10_000,
        trace_io=True,
    )
    if res.stats["error"]:
        raise RuntimeError(f"kernel error {res.stats['error']} on {trace.name}")
    tr = res.cc_trace
    if tr.shape[0] >= 8 * trace.packets + 10_000:
        raise RuntimeError(f"trace of {trace.name} overflowed")
    # the sender's inputs and rate rows only: not its QP's end, not the receiver's arrivals
    return tr[(tr[:, EV] != kn.TR_DONE) & (tr[:, EV] != kn.TR_RECV)]


def replay(
    profile: Dcqcn, trace: Trace, cfg: FabricConfig = FABRIC, golden: Dcqcn | None = None
) -> list[Mismatch]:
    """Feed the kernel's inputs to the golden reaction point; the first differences found.
    `golden` gives the golden model another profile than the kernel's (the suite's own test:
    a difference of one constant must be found)."""
    tr = kernel_trace(profile, trace, cfg)
    cc = replace(cfg, dcqcn=profile)
    mtu = cfg.mtu
    win = _window(cc)
    rp = ReactionPoint(golden or profile, cfg.link_gbps)
    bad: list[Mismatch] = []
    seen = 0  # rate rows of the kernel matched so far
    una = 0
    nxt = 0
    prev_send: int | None = None
    next_avail = 0
    full_at_avail = False  # the window, as the rows up to next_avail leave it

    def fail(i: int, what: str) -> None:
        if len(bad) < 20:
            bad.append(Mismatch(trace.name, profile.name, i, what))

    for i, row in enumerate(tr):
        t = int(row[T])
        ev = int(row[EV])
        if ev in RATE_EVENTS:
            # a timer's row, or the row of the input just fed: the golden model has it
            rp.advance(t)
            if seen >= len(rp.log):
                fail(i, f"kernel event {ev} at {t} ps, none in the golden model")
                break
            want = rp.log[seen]
            got = (t, ev, row[RC], row[RT], row[ALPHA], int(row[A]))
            if got != want:
                fail(i, f"kernel {got} != golden {want}")
                break
            seen += 1
            if prev_send is not None and t <= next_avail:
                full_at_avail = bool(win) and (nxt - una) * mtu >= rp.window_bytes(win)
            continue
        # an input at t: the golden timers due before it first (at t only if the kernel's
        # next rate row says the timer ran first, which the branch above handles)
        rp.advance(t - 1)
        if ev == kn.TR_ACK:
            seq, flags = int(row[A]), int(row[B])
            if flags & 2:
                nxt = max(una, seq)
            una = max(una, seq)
            if flags & 1:
                rp.on_cnp(t)
        elif ev == kn.TR_SEND:
            psn, inflight = int(row[A]), int(row[B])
            if not profile.ack_frames:
                una = psn + 1 - inflight  # the receiver's progress came out of band (no window)
            if psn != nxt:
                fail(i, f"sent PSN {psn}, the golden sender's next is {nxt}")
            nxt = psn + 1
            if win and (psn - una) * mtu >= rp.window_bytes(win):
                fail(i, f"sent PSN {psn} with {psn - una} in flight: the window is full")
            if inflight != nxt - una:
                fail(i, f"in flight {inflight}, golden {nxt - una}")
            if prev_send is not None:
                if t < next_avail:
                    fail(i, f"sent at {t} ps, before the pacing allows ({next_avail})")
                elif t > next_avail and not (full_at_avail and _acked_at(tr, i, t)):
                    fail(i, f"sent at {t} ps, later than the pacing ({next_avail}) unheld")
            gap = rp.gap_ps(mtu)
            prev_send, next_avail = t, t + gap
            rp.on_sent(t, mtu)
        if prev_send is not None and t <= next_avail:
            # when the pacing lets the next frame go: is the window full? (VAR_WIN: at the
            # rate then)
            full_at_avail = bool(win) and (nxt - una) * mtu >= rp.window_bytes(win)
        if seen < len(rp.log) and not _row_follows(tr, i, rp.log[seen]):
            fail(i, f"golden event {rp.log[seen]} after input at {t} ps, not in the kernel")
            break
    rp.advance(int(tr[-1, T]) if len(tr) else 0)
    if not bad and seen != len(rp.log):
        fail(len(tr), f"golden has {len(rp.log) - seen} rate events more than the kernel")
    return bad


def _row_follows(tr: np.ndarray, i: int, want: tuple) -> bool:
    """The golden event produced by input row i is the kernel's next rate row."""
    for j in range(i + 1, tr.shape[0]):
        if int(tr[j, EV]) in RATE_EVENTS:
            return int(tr[j, T]) == want[0] and int(tr[j, EV]) == want[1]
    return False


def _acked_at(tr: np.ndarray, i: int, t: int) -> bool:
    """An ACK reached the sender at t, before send row i (TriggerTransmit)."""
    j = i - 1
    while j >= 0 and int(tr[j, T]) == t:
        if int(tr[j, EV]) == kn.TR_ACK:
            return True
        j -= 1
    return False


def _window(cfg: FabricConfig) -> int:
    """The trace flow's window in bytes, as the kernel gets it (0: none): a path of 4 hops."""
    return int(flow_windows(cfg, np.array([4], dtype=np.int64))[0])


def run_all(
    profiles: list[str] | None = None, traces: list[str] | None = None
) -> dict[tuple[str, str], list[Mismatch]]:
    out = {}
    for pname in profiles or list(SUITE):
        for t in TRACES:
            if traces and t.name not in traces:
                continue
            out[pname, t.name] = replay(SUITE[pname], t)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", action="append", choices=sorted(SUITE))
    ap.add_argument("--trace", action="append", choices=[t.name for t in TRACES])
    args = ap.parse_args(argv)
    failed = 0
    for (pname, tname), bad in run_all(args.profile, args.trace).items():
        print(f"{pname:16} {tname:14} {'ok' if not bad else 'FAILED'}")
        for m in bad:
            print(f"    {m}")
        failed += bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
