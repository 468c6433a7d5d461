"""The evaluation simulator on a tiny ring: it finishes, conserves packets, and Symphony's marks
land only on outpacing packets."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

# evaluation/ is a top-level directory of the repo, not part of the installed package.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.sim import SimConfig, simulate
from symphony.model.params import JobParams

TINY = SimConfig(rings=2, nodes=4, chunk=40, capacity=2.0, line_rate=0.5, slow_frac=0.5)


@pytest.mark.parametrize("symphony", [None, JobParams(k=0.01), JobParams(k=64.0)])
def test_tiny_run_completes_and_conserves(symphony: JobParams | None) -> None:
    cfg = replace(TINY, symphony=symphony, bg_rate=0.5, bg_duration=100, buffer=60)
    res = simulate(cfg, seed=3)
    assert all(done == cfg.steps for ring in res.steps_done for done in ring)
    assert all(c > 0 for c in res.ring_cct) and res.cct == max(res.ring_cct)
    assert res.data_delivered == cfg.rings * cfg.nodes * cfg.steps * cfg.chunk
    assert res.data_sent == res.data_delivered + res.data_dropped
    assert res.bg_sent >= res.bg_delivered + res.bg_dropped
    assert 1.0 <= res.overlap_max <= cfg.nodes


def test_large_k_marks_only_outpacing_packets() -> None:
    res = simulate(replace(TINY, symphony=JobParams(k=64.0, n_warmup=2, n_sample=4)), seed=5)
    assert res.symphony_marks > 0
    assert res.marks_not_outpacing == 0


def test_baseline_never_symphony_marks_and_is_deterministic() -> None:
    a, b = simulate(TINY, seed=7), simulate(TINY, seed=7)
    assert a.symphony_marks == 0
    assert (a.cct, a.queue_marks, a.cnps, a.overlap_mean) == (
        b.cct,
        b.queue_marks,
        b.cnps,
        b.overlap_mean,
    )
