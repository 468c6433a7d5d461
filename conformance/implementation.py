"""The `Implementation` protocol: what the runner needs from any implementation of the algorithm.

Per packet an implementation reports a row of decision columns (`COLUMNS`), as many as it can
see: the golden model and the kernel report all of them, a real switch only what leaves it (the
ECN codepoint and, through it or its counter, the Symphony mark). After a trace the runner reads
the whole `JobState` of every job (all its fields, `step_max` included) and, where the
implementation exposes it, the flow table (slot -> 64-bit flow_base value, non-zero slots only).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from conformance.traces import Trace, TracePacket
from symphony.model.switch_model import JobState

# The decision columns of one packet: its job (0: untracked), p (-1: unknown), the coin
# threshold, the Symphony mark (0 or 1; -1: the implementation cannot tell) and the ECN
# codepoint it leaves with.
COLUMNS = ("job", "p", "threshold", "mark", "ecn")
JOB, P, THRESHOLD, MARK, ECN = range(len(COLUMNS))
Row = tuple[int, int, int, int, int]


def row_of(values: np.ndarray) -> Row:
    """One decision row of an array of them, as a tuple."""
    job, p, threshold, mark, ecn = (int(v) for v in values)
    return (job, p, threshold, mark, ecn)


class Implementation(Protocol):
    name: str
    # The decision columns it reports; the others are not compared.
    exposes: frozenset[str]
    # JobState fields it cannot reproduce from the trace (a real switch's clock: win_start).
    volatile: frozenset[str]
    # True when its marks come from its own random numbers, not the trace's coins: the runner
    # then lets the reference follow its mark wherever the reference's P is strictly between
    # 0 and 1, and compares the mark where P is 0 or 1.
    own_coin: bool

    def unavailable(self) -> str | None:
        """None when it can run here, else why not (printed with its name)."""

    def start(self, trace: Trace) -> None:
        """A fresh switch (SPEC 3's initial state) with the trace's jobs installed."""

    def process(self, tp: TracePacket) -> Row:
        """One packet; its decision row (columns it does not expose: anything)."""

    def run(self, packets: Sequence[TracePacket]) -> np.ndarray:
        """Every packet in order: one row each, shape (len(packets), len(COLUMNS))."""

    def state(self, job_id: int) -> JobState:
        """The job's whole state now."""

    def flow_table(self) -> dict[int, int] | None:
        """Non-zero flow slots -> value, or None when the implementation does not expose it."""

    def finish(self) -> None:
        """Undo `start` (a real switch: delete the entries, zero the registers)."""


class PacketByPacket:
    """`run` for an implementation that processes one packet at a time."""

    def process(self, tp: TracePacket) -> Row:
        raise NotImplementedError

    def run(self, packets: Sequence[TracePacket]) -> np.ndarray:
        rows = np.zeros((len(packets), len(COLUMNS)), dtype=np.int64)
        for i, tp in enumerate(packets):
            rows[i] = self.process(tp)
        return rows

    def finish(self) -> None:
        """Nothing to undo: `start` builds a fresh state."""
