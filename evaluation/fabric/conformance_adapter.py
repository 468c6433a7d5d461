"""The conformance suite's adapter for the fabric simulator's numba port of the algorithm
(`symphony_kernel.py`), kept beside the kernel: conformance/ sits beneath evaluation/ and never
imports it. The suite finds this adapter through the entry-point group `symphony.conformance`,
where the symphony-tools distribution registers it (controller/symphony_tools/pyproject.toml).

One switch (index 0) with the trace's jobs; a whole trace goes through `run_trace` in one call,
a single packet through the same call on a one-packet trace (the state arrays persist). The
JobState is read column by column from `symphony_kernel.JS`, which is derived from the JobState
dataclass, so a field the kernel does not compute shows up here as a mismatch.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import numpy as np

from conformance.implementation import COLUMNS, ECN, MARK, Row, row_of
from conformance.traces import Trace, TracePacket
from evaluation.fabric import symphony_kernel as sk
from symphony.model.switch_model import JobState, ecn_out, flow_slot
from symphony.sizes import FLOW_SLOTS, MAX_JOBS, TAG_MAX

# The kernel's out columns: (job, p, threshold, mark); the ECN is the model's SPEC 4.5 rule.
_OUT = ("job", "p", "threshold", "mark")
assert COLUMNS[: len(_OUT)] == _OUT


@cache
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return sk.golden_tables()


@cache
def _slot(src: int, dqpn: int) -> tuple[int, int]:
    return flow_slot(src, dqpn)


class KernelAdapter:
    name = "kernel"
    exposes = frozenset(COLUMNS)
    volatile: frozenset[str] = frozenset()
    own_coin = False

    def __init__(self) -> None:
        self.js = np.zeros((1, MAX_JOBS, sk.JS_FIELDS), dtype=np.int64)
        self.flows = np.zeros((1, FLOW_SLOTS), dtype=np.int64)
        self.prm = np.zeros((MAX_JOBS, sk.P_FIELDS), dtype=np.int64)
        self.job_by_tag = np.zeros(TAG_MAX + 1, dtype=np.int64)
        self.job_by_src: dict[int, int] = {}

    def unavailable(self) -> str | None:
        return None

    def start(self, trace: Trace) -> None:
        self.js[:] = 0
        self.js[:, :, sk.JS_ALPHA] = 1  # SPEC 3: a new job starts at alpha = 1
        self.flows[:] = 0
        self.prm[:] = 0
        self.job_by_tag[:] = 0
        self.job_by_src = {}
        for job in trace.jobs:
            self.prm[job.job_id] = sk.action_row(job.action)
            if job.tag:
                self.job_by_tag[job.job_id] = job.job_id
            for src in job.hosts:
                self.job_by_src[src] = job.job_id

    def run(self, packets: Sequence[TracePacket]) -> np.ndarray:
        n = len(packets)
        cols = {
            k: np.zeros(n, dtype=np.int64)
            for k in ("tag", "src_job", "slot", "sig", "step", "opcode", "psn", "now", "coin")
        }
        for i, tp in enumerate(packets):
            pkt = tp.pkt
            cols["tag"][i] = pkt.tag
            cols["src_job"][i] = self.job_by_src.get(pkt.src, 0)
            cols["slot"][i], cols["sig"][i] = _slot(pkt.src, pkt.dqpn)
            cols["step"][i] = pkt.step
            cols["opcode"][i] = pkt.opcode
            cols["psn"][i] = pkt.psn
            cols["now"][i] = tp.now
            cols["coin"][i] = tp.coin
        out = np.zeros((n, len(_OUT)), dtype=np.int64)
        sk.run_trace(
            self.js,
            self.flows,
            self.prm,
            self.job_by_tag,
            cols["tag"],
            cols["src_job"],
            cols["slot"],
            cols["sig"],
            cols["step"],
            cols["opcode"],
            cols["psn"],
            cols["now"],
            cols["coin"],
            out,
            *_tables(),
        )
        rows = np.zeros((n, len(COLUMNS)), dtype=np.int64)
        rows[:, : len(_OUT)] = out
        rows[:, ECN] = [
            ecn_out(tp.pkt.ecn, bool(m), False)
            for tp, m in zip(packets, out[:, MARK].tolist(), strict=True)
        ]
        return rows

    def process(self, tp: TracePacket) -> Row:
        return row_of(self.run([tp])[0])

    def state(self, job_id: int) -> JobState:
        return JobState(**{f: int(self.js[0, job_id, col]) for f, col in sk.JS.items()})

    def flow_table(self) -> dict[int, int]:
        return {int(s): int(self.flows[0, s]) for s in np.nonzero(self.flows[0])[0]}

    def finish(self) -> None:
        """Nothing to undo: `start` zeroes the arrays."""
