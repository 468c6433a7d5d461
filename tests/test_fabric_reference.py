"""The fabric kernel gives the recorded runs bit for bit (tests/fabric_reference.py recorded them
from the kernel before issue 22's speed work): every runs.csv column but wall_s, and a digest of
all statistics, per-flow times and sampled series."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fabric_reference as ref


def test_recorded_runs_are_reproduced() -> None:
    recorded = ref.load()
    runs = ref.cases()
    assert len(recorded) == len(runs)
    for run, want in zip(runs, recorded, strict=True):
        got = {k: str(v) for k, v in ref.reference_row(run).items()}
        key = (run.scenario, run.variant, run.seed)
        for col in (*ref.COMPARED, "digest"):
            assert got[col] == want[col], (key, col, got[col], want[col])
