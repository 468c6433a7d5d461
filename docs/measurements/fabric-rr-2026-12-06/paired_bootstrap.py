"""A fabric run's policy changes resampled over its seeds, paired across the two instruments:
how docs/experiments.md's spreads for the 20-seed dcqcn-paper 2x2x4 cell were made (2026-12-06).

    python3 docs/measurements/fabric-rr-2026-12-06/paired_bootstrap.py \
        docs/measurements/fabric-rr-2026-12-06/dcqcn-paper-2x2x4-20

Per variant: 2,000 draws of the seeds with replacement; each draw's median change against the
baseline on bmv2 and in the simulator, and their difference (simulator - bmv2, points); 5/50/95 %.
"""

from __future__ import annotations

import csv
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

DRAWS = 2000


def cct(path: Path, column: str) -> dict[str, dict[int, float]]:
    out: dict[str, dict[int, float]] = defaultdict(dict)
    for r in csv.DictReader(path.open()):
        if r.get("complete", "True") == "True":
            out[r["variant"]][int(r["seed"])] = float(r[column])
    return out


def main(run: Path) -> None:
    b, s = cct(run / "runs.csv", "cct_s"), cct(run / "sim.csv", "sim_cct_s")
    rng = np.random.default_rng(0)
    for v in sorted(set(b) - {"baseline"}):
        seeds = sorted(set(b[v]) & set(b["baseline"]))
        b0, b1, s0, s1 = (
            np.array([d[x] for x in seeds]) for d in (b["baseline"], b[v], s["baseline"], s[v])
        )
        cb, cs = [], []
        for _ in range(DRAWS):
            i = rng.integers(0, len(seeds), len(seeds))
            cb.append(100 * (np.median(b1[i]) / np.median(b0[i]) - 1))
            cs.append(100 * (np.median(s1[i]) / np.median(s0[i]) - 1))
        q = [5, 50, 95]
        print(
            v,
            "bmv2",
            np.round(np.percentile(cb, q), 1),
            "simulator",
            np.round(np.percentile(cs, q), 1),
            "difference",
            np.round(np.percentile(np.array(cs) - np.array(cb), q), 1),
            f"seeds faster: bmv2 {int((b1 < b0).sum())}, simulator {int((s1 < s0).sum())}"
            f" of {len(seeds)}",
        )


if __name__ == "__main__":
    main(Path(sys.argv[1]))
