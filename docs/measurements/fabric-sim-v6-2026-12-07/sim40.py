"""The simulator's own spread for a fabric run's cells: its 40 seeds 100-139 of the run's setup
and variants, each variant's change against the baseline over the 40 and the spread of a median
over as many seeds as the bmv2 run has (2,000 draws without replacement; 5/50/95 %). How
docs/experiments.md's kernel-v6 spreads were made (2026-12-07):

    PYTHONPATH=. .venv/bin/python docs/measurements/fabric-sim-v6-2026-12-07/sim40.py RUN_DIR
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
from pathlib import Path

import numpy as np

from evaluation.hosts import fabric_experiment as fx
from evaluation.hosts import flow_compare as fc

SEEDS = range(100, 140)
DRAWS = 2000


def main(run: Path) -> None:
    setup = fc.setup_of(run)
    rows = list(csv.DictReader((run / "runs.csv").open()))
    variants = list(dict.fromkeys(r["variant"] for r in rows))
    n = len({r["seed"] for r in rows})
    cct = {
        v: [fx.simulate_row(setup, fc.variant_of(v), s)["sim_cct_s"] for s in SEEDS]
        for v in variants
    }
    rng = np.random.default_rng(0)
    base = np.array(cct["baseline"])
    print(f"{run}: seeds {SEEDS[0]}-{SEEDS[-1]}; medians of {n} seeds resampled")
    for v in variants:
        x = np.array(cct[v])
        q = np.quantile(x, [0.1, 0.9]).round(3)
        line = f"{v} median {statistics.median(x):.3f} s, q10-q90 {q}"
        if v != "baseline":
            ch = 100 * (np.median(x) / np.median(base) - 1)
            draws = [rng.choice(len(SEEDS), n, replace=False) for _ in range(DRAWS)]
            sub = [100 * (np.median(x[i]) / np.median(base[i]) - 1) for i in draws]
            line += f"; change {ch:+.1f} %; a {n}-seed median's change 5/50/95 %: "
            line += str(np.percentile(sub, [5, 50, 95]).round(1))
        print(line)
    (run / "sim40.json").write_text(json.dumps(cct))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
