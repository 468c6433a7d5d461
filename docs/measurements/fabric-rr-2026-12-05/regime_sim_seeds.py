"""The regime fabric's simulator column over 40 seeds (100-139) and the spread of a 5-seed
median's change: how docs/experiments.md's regime table was made (2026-12-05).

    PYTHONPATH=. .venv/bin/python docs/measurements/fabric-rr-2026-12-05/regime_sim_seeds.py \
        docs/measurements/fabric-rr-2026-12-05/regime-hpcc-config [out.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from evaluation.hosts import fabric_experiment as fx
from evaluation.hosts import flow_compare as fc

SEEDS = range(100, 140)
DRAWS, PER_DRAW = 2000, 5

run = Path(sys.argv[1])
setup = fc.setup_of(run)
cct = {
    v: [fx.simulate_row(setup, fc.variant_of(v), s)["sim_cct_s"] for s in SEEDS]
    for v in ("baseline", "k=0.01", "gate8-k0.001")
}
base = np.array(cct["baseline"])
rng = np.random.default_rng(0)
for v, xs in cct.items():
    x = np.array(xs)
    print(
        v,
        "median",
        round(float(np.median(x)), 2),
        "q10-q90",
        np.round(np.percentile(x, [10, 90]), 1),
    )
    if v == "baseline":
        continue
    draws = []
    for _ in range(DRAWS):
        i = rng.integers(0, len(SEEDS), PER_DRAW)
        draws.append(100 * (np.median(x[i]) / np.median(base[i]) - 1))
    print(
        v,
        "change",
        round(100 * (np.median(x) / np.median(base) - 1), 1),
        "%; a 5-seed median's change 5/50/95 %:",
        np.round(np.percentile(draws, [5, 50, 95]), 1),
    )
if len(sys.argv) > 2:  # the per-seed CCTs, as regime-sim-seeds100-139.json holds them
    Path(sys.argv[2]).write_text(json.dumps(cct))
