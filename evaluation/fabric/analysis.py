"""Why a run is slower than lockstep: the ECMP collision bound.

If every step ran in lockstep but each flow got only its fair share of the most loaded link on
its path (the flows of the same step that ECMP hashed onto one uplink or spine downlink), step s
would take chunk / (B / max load on its paths) and the collective the sum over steps. Symphony
cannot remove this part: flows colliding within one step are all in the job's `step_min`, so none
of them is outpacing.

    python -m evaluation.fabric.analysis --seeds 20
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import replace

import numpy as np

from evaluation.fabric.collectives import lockstep_bound_us
from evaluation.fabric.config import FabricConfig
from evaluation.fabric.topology import build_fabric, build_workload


def collision_bound_us(cfg: FabricConfig, seed: int) -> float:
    """Sum over steps of the chunk time at the share left by the worst same-step collision
    (the critical path of the ring dependency is approximated by the slowest flow of each step)."""
    rng = np.random.default_rng(seed)
    fab = build_fabric(cfg)
    wl = build_workload(cfg, fab, rng)
    chunk_us = cfg.pkts_per_chunk * cfg.mtu * 8 / (cfg.link_gbps * 1000)
    total = 0.0
    for s in range(wl.n_steps):
        flows = np.nonzero(wl.f_step == s)[0]
        load = Counter(int(p) for f in flows for p in wl.f_path[f, 1 : wl.f_plen[f]])
        worst = max(max(load[int(p)] for p in wl.f_path[f, 1 : wl.f_plen[f]]) for f in flows)
        total += chunk_us * worst
    return total


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--hosts", type=int, default=32)
    args = ap.parse_args(argv)
    cfg = replace(FabricConfig(), hosts=args.hosts)
    b = [collision_bound_us(cfg, s) for s in range(args.seeds)]
    lock = lockstep_bound_us(cfg)
    print(
        f"{args.hosts} hosts: lockstep {lock / 1000:.1f} ms; ECMP collision bound median "
        f"{np.median(b) / 1000:.1f} ms = {np.median(b) / lock:.2f} x lockstep "
        f"(min {min(b) / lock:.2f}, max {max(b) / lock:.2f}) over {args.seeds} seeds"
    )


if __name__ == "__main__":
    main()
