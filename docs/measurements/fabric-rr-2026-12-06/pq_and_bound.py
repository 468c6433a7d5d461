"""PQ (strict priority for lagging flows, which only the simulator has) and the link-load bound
beside a fabric run's bmv2 cells, on the run's own seeds: how docs/experiments.md's 15-seed
regime table got its PQ row and its bound (2026-12-06).

    PYTHONPATH=. .venv/bin/python docs/measurements/fabric-rr-2026-12-06/pq_and_bound.py \
        docs/measurements/fabric-rr-2026-12-06/regime-hpcc-config-15
"""

from __future__ import annotations

import csv
import statistics
import sys
from dataclasses import replace
from pathlib import Path

from evaluation.fabric.sim import simulate
from evaluation.hosts import flow_compare as fc


def main(run: Path) -> None:
    setup = fc.setup_of(run)
    seeds = sorted({int(r["seed"]) for r in csv.DictReader((run / "runs.csv").open())})
    to_s = 1e-6 * setup.scale
    base = setup.sim_config(fc.variant_of("baseline"))
    b = [simulate(base, s) for s in seeds]
    pq = [simulate(replace(base, mode="pq"), s) for s in seeds]
    b_cct = statistics.median(r.cct_us[0] * to_s for r in b)
    pq_cct = statistics.median(r.cct_us[0] * to_s for r in pq)
    print(f"seeds {seeds[0]}-{seeds[-1]}: simulator baseline {b_cct:.2f} s")
    print(f"PQ {pq_cct:.2f} s ({100 * (pq_cct / b_cct - 1):+.1f} % against that baseline)")
    print(f"link-load bound {statistics.median(r.bound_us * to_s for r in b):.2f} s")
    print(f"lockstep bound {statistics.median(r.lockstep_us * to_s for r in b):.2f} s")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
