"""Run traces through implementations and compare each with the reference, the golden model on
bmv2: per packet every decision column the implementation exposes, after every trace the whole
JobState of every job (but the fields it declares volatile) and the flow table.

An implementation with its own coin (a real switch) runs in lockstep with a reference of its
own, which follows its mark wherever P is strictly between 0 and 1 (`Implementation.own_coin`);
the others are compared with one reference run per trace.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from conformance.adapters.model import ModelAdapter
from conformance.implementation import COLUMNS, JOB, MARK, THRESHOLD, Implementation, P
from conformance.traces import Trace
from symphony.model import arithmetic as ar
from symphony.model.switch_model import JobState


@dataclass(frozen=True)
class Mismatch:
    adapter: str
    seed: int
    packet: int | None  # None: the state after the trace
    field: str
    expected: object
    got: object

    def __str__(self) -> str:
        where = "after the trace" if self.packet is None else f"packet {self.packet}"
        return (
            f"{self.adapter}: trace seed {self.seed}, {where}: {self.field}"
            f" expected {self.expected} got {self.got}"
        )


@dataclass
class Expected:
    """The reference's run of one trace."""

    rows: np.ndarray
    states: dict[int, JobState]
    flows: dict[int, int]


@dataclass
class Result:
    adapter: str
    skipped: str | None = None
    traces: int = 0
    packets: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    coverage: Counter[str] = field(default_factory=Counter)


def reference_run(trace: Trace, reference: Implementation) -> Expected:
    reference.start(trace)
    try:
        rows = reference.run(trace.packets)
        return _expected(trace, reference, rows)
    finally:
        reference.finish()


def _expected(trace: Trace, reference: Implementation, rows: np.ndarray) -> Expected:
    states = {job.job_id: reference.state(job.job_id) for job in trace.jobs}
    return Expected(rows, states, reference.flow_table() or {})


def _lockstep(
    trace: Trace, impl: Implementation, reference: Implementation
) -> tuple[np.ndarray, Expected]:
    """Each packet through `impl` (started), then through the reference with the coin that makes the
    reference's mark the implementation's wherever the reference's P is strictly between 0 and
    1 (coin 0 marks at every threshold > 0, coin 2^24 - 1 at none below 2^24)."""
    reference.start(trace)
    try:
        got = np.zeros((len(trace.packets), len(COLUMNS)), dtype=np.int64)
        want = np.zeros_like(got)
        for i, tp in enumerate(trace.packets):
            got[i] = impl.process(tp)
            mark = int(got[i, MARK])
            coin = None if mark < 0 else (0 if mark else ar.COIN_RANGE - 1)
            want[i] = reference.process(replace(tp, coin=coin))
        return got, _expected(trace, reference, want)
    finally:
        reference.finish()


def compare(
    trace: Trace, impl: Implementation, got: np.ndarray, expected: Expected
) -> list[Mismatch]:
    """Every difference between an implementation's run of `trace` and the reference's."""
    out: list[Mismatch] = []
    want = expected.rows
    cols = [COLUMNS.index(c) for c in COLUMNS if c in impl.exposes]
    differ = want[:, cols] != got[:, cols]
    # A mark the reference could not decide (no coin given) is not compared.
    if MARK in cols:
        differ[:, cols.index(MARK)] &= want[:, MARK] >= 0
    bad = np.nonzero(differ.any(axis=1))[0]
    if bad.size:
        i = int(bad[0])
        for c in cols:
            if want[i, c] != got[i, c]:
                out.append(Mismatch(impl.name, trace.seed, i, COLUMNS[c], want[i, c], got[i, c]))
        out.append(
            Mismatch(impl.name, trace.seed, None, "packets differing", 0, f"{bad.size} (first {i})")
        )
    skip = set(impl.volatile) | ({"marks"} if (want[:, MARK] < 0).any() else set())
    for job in trace.jobs:
        w, g = asdict(expected.states[job.job_id]), asdict(impl.state(job.job_id))
        for name in w:
            if name not in skip and w[name] != g[name]:
                out.append(
                    Mismatch(
                        impl.name, trace.seed, None, f"job {job.job_id} {name}", w[name], g[name]
                    )
                )
    flows = impl.flow_table()
    if flows is not None:
        slots = sorted(
            s for s in set(flows) | set(expected.flows) if flows.get(s) != expected.flows.get(s)
        )
        for s in slots[:3]:
            out.append(
                Mismatch(
                    impl.name,
                    trace.seed,
                    None,
                    f"flow slot {s}",
                    _hex(expected.flows.get(s)),
                    _hex(flows.get(s)),
                )
            )
        if len(slots) > 3:
            out.append(Mismatch(impl.name, trace.seed, None, "flow slots differing", 0, len(slots)))
    return out


def _hex(v: int | None) -> str:
    return "empty" if v is None else f"{v:#018x}"


def coverage(expected: Expected) -> Counter[str]:
    """What the reference's run reached: the branches a trace set must exercise."""
    rows = expected.rows
    tracked = rows[:, JOB] > 0
    thr = rows[:, THRESHOLD]
    return Counter(
        tracked=int(tracked.sum()),
        untracked=int((~tracked).sum()),
        unknown_p=int((tracked & (rows[:, P] < 0)).sum()),
        thr_partial=int(((thr > 0) & (thr < ar.COIN_RANGE)).sum()),
        thr_certain=int((thr >= ar.COIN_RANGE).sum()),
        marks=int((rows[:, MARK] > 0).sum()),
        alpha_above_1=sum(st.alpha > 1 for st in expected.states.values()),
    )


def run_suite(
    traces: Iterable[Trace],
    impls: Sequence[Implementation],
    reference: Callable[[], Implementation] = ModelAdapter,
) -> list[Result]:
    """Every available implementation over every trace; one Result each, in order."""
    results = [Result(impl.name, skipped=impl.unavailable()) for impl in impls]
    live = [(impl, res) for impl, res in zip(impls, results, strict=True) if res.skipped is None]
    shared = reference()
    for trace in traces:
        expected = None
        if any(not impl.own_coin for impl, _ in live):
            expected = reference_run(trace, shared)
        for impl, res in live:
            impl.start(trace)
            try:
                if impl.own_coin:
                    got, exp = _lockstep(trace, impl, reference())
                else:
                    assert expected is not None
                    got, exp = impl.run(trace.packets), expected
                res.mismatches += compare(trace, impl, got, exp)
            finally:
                impl.finish()
            res.traces += 1
            res.packets += len(trace.packets)
            res.coverage += coverage(exp)
    return results


def report(results: Sequence[Result], limit: int = 40) -> str:
    """One line per implementation, then its first `limit` mismatches."""
    lines = []
    for r in results:
        if r.skipped is not None:
            lines.append(f"{r.adapter}: SKIPPED ({r.skipped})")
            continue
        lines.append(
            f"{r.adapter}: {r.traces} traces, {r.packets:,} packets, {len(r.mismatches)} mismatches"
        )
    for r in results:
        for m in r.mismatches[:limit]:
            lines.append(f"  {m}")
        if len(r.mismatches) > limit:
            lines.append(f"  ... {len(r.mismatches) - limit} more for {r.adapter}")
    return "\n".join(lines)
