"""Broken implementations, to show that the suite fails them (tests/test_conformance.py and
`python -m conformance --inject ...`).

- `AlphaPlusTwo`: the golden model with a wrong window rule, alpha + 2 instead of + 1 when a
  window closes with enough ahead packets: a fault in the algorithm, which then shows in later
  thresholds and marks as well as in the state.
- `Perturbed`: any implementation whose reading of one JobState field or one decision column is
  off by `delta`: the fault a port that drops or mis-reads a register would have.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from conformance.adapters.model import ModelAdapter
from conformance.implementation import COLUMNS, Implementation, Row, row_of
from conformance.traces import Trace, TracePacket
from symphony.model import arithmetic as ar
from symphony.model.switch_model import JobState


class AlphaPlusTwo(ModelAdapter):
    def __init__(self, target: str = "bmv2") -> None:
        super().__init__(target)
        self.name = f"{self.name}+alpha-fault"

    def process(self, tp: TracePacket) -> Row:
        job = self.model.classify(tp.pkt)
        before = self.model.state(job).alpha if job is not None else 0
        row = super().process(tp)
        if job is not None:
            st = self.model.jobs[job]
            if st.alpha > before:
                st.alpha = min(st.alpha + 1, ar.ALPHA_LIMIT)
        return row


class Perturbed:
    """`inner` with one JobState field (`state`) or decision column (`column`) off by delta."""

    def __init__(
        self,
        inner: Implementation,
        *,
        state: str | None = None,
        column: str | None = None,
        delta: int = 1,
    ) -> None:
        if (state is None) == (column is None):
            raise ValueError("perturb exactly one of a state field and a decision column")
        if state is not None and state not in JobState.__dataclass_fields__:
            raise ValueError(f"no JobState field {state!r}")
        if column is not None and column not in inner.exposes:
            raise ValueError(f"{inner.name} does not expose the column {column!r}")
        self.inner = inner
        self.field = state
        self.column = None if column is None else COLUMNS.index(column)
        self.delta = delta
        self.name = f"{inner.name}+{state or column}{delta:+d}"
        self.exposes = inner.exposes
        self.volatile = inner.volatile
        self.own_coin = inner.own_coin

    def unavailable(self) -> str | None:
        return self.inner.unavailable()

    def start(self, trace: Trace) -> None:
        self.inner.start(trace)

    def run(self, packets: Sequence[TracePacket]) -> np.ndarray:
        rows = self.inner.run(packets)
        if self.column is not None:
            rows[:, self.column] += self.delta
        return rows

    def process(self, tp: TracePacket) -> Row:
        return row_of(self.run([tp])[0])

    def state(self, job_id: int) -> JobState:
        st = self.inner.state(job_id)
        if self.field is None:
            return st
        return replace(st, **{self.field: getattr(st, self.field) + self.delta})

    def flow_table(self) -> dict[int, int] | None:
        return self.inner.flow_table()

    def finish(self) -> None:
        self.inner.finish()
