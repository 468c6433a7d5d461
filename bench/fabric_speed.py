"""Speed of the fabric simulator (evaluation/fabric) beside the single-port pure-Python one
(evaluation/sim.py), measured in one run on this machine.

    python bench/fabric_speed.py                 # Table 1 default, 20 seeds, 2 workers

Reports: the numba kernel's events/s and switch-hops/s per core (JIT compile excluded: one warm-up
run first), the wall time of 20 seeds of the Table 1 default (32 nodes, 8 MB chunks, ECMP,
baseline and Symphony) on all cores, and the old simulator's cost per packet through the
golden model's Python pipeline.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.fabric.config import FabricConfig
from evaluation.fabric.sim import simulate
from evaluation.sim import SimConfig
from evaluation.sim import simulate as old_simulate
from symphony.model.params import JobParams


def _one(args: tuple[FabricConfig, int]) -> tuple[int, int, float, float]:
    cfg, seed = args
    r = simulate(cfg, seed)
    assert r.stats["error"] == 0
    return r.stats["events"], r.stats["switch_hops"], r.wall_s, r.cct_max_us


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    base = FabricConfig()
    simulate(replace(base, chunk_bytes=64 << 10, mode="symphony"), 0)  # JIT (cached) warm-up
    for mode in ("baseline", "symphony"):
        cfg = replace(base, mode=mode)
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            list(pool.map(_one, [(replace(cfg, chunk_bytes=64 << 10), 0)] * args.jobs))
            t0 = time.monotonic()
            out = list(pool.map(_one, [(cfg, s) for s in range(args.seeds)]))
            wall = time.monotonic() - t0
        ev = sum(o[0] for o in out)
        hops = sum(o[1] for o in out)
        cpu = sum(o[2] for o in out)
        print(
            f"fabric {mode:9s}: {args.seeds} seeds of the Table 1 default in {wall:.1f} s wall "
            f"on {args.jobs} workers; {ev / cpu / 1e6:.1f} M events/s and "
            f"{hops / cpu / 1e6:.1f} M switch-hops/s per core ({ev / args.seeds / 1e6:.1f} M "
            f"events per seed)"
        )
    old = SimConfig(symphony=JobParams(k=0.01))
    t0 = time.perf_counter()
    res = old_simulate(old, 0)
    wall = time.perf_counter() - t0
    per_pkt = wall / res.data_delivered
    print(
        f"evaluation/sim.py (pure Python, golden Pipeline per packet): {res.data_delivered} "
        f"packets in {wall:.1f} s = {per_pkt * 1e6:.1f} us per packet-hop "
        f"({1 / per_pkt / 1e3:.0f} k/s)"
    )


if __name__ == "__main__":
    main()
