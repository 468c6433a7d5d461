"""What one training iteration costs the fabric simulator (issue 47): per model and scale, the
workload's setup (the iteration's DAG, then every flow's ns-3 paths and flow-table slot, in
Python) and the kernel's run (thread CPU time of the kernel call, one core), its events and
events per second, the flows and the peak memory.

    python bench/training_cost.py                          # ResNet50 at 128 nodes, seed 100
    python bench/training_cost.py --model vgg16 --hosts 512
    python bench/training_cost.py --hosts 512 --setup-only    # the workload's setup alone

Times are thread CPU seconds of this process (the machine is shared: a wall clock would count
the other processes' share of the core). One process per scale: the peak memory is the run's.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evaluation.fabric import sim
from evaluation.fabric.regime_map import BY_NAME, Regime, config
from evaluation.fabric.topology import build_fabric, sends_workload
from evaluation.fabric.training import iteration_graph
from evaluation.fabric.training_eval import MODELS
from evaluation.fabric.workload_text import read_text


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="resnet50", choices=sorted(MODELS))
    ap.add_argument("--hosts", type=int, default=128)
    ap.add_argument("--option", default="dcqcn")
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument(
        "--setup-only", action="store_true", help="build the workload, skip the kernel's run"
    )
    args = ap.parse_args()
    cfg = config(Regime("2d", "windowed", args.hosts, 8 << 20), BY_NAME[args.option])
    wl = read_text(MODELS[args.model])

    t0 = time.thread_time()
    g = iteration_graph(wl, cfg)
    sends, dur = g.sends()
    t_graph = time.thread_time() - t0
    timed: dict[str, float] = {}

    def build(cfg_, fab, rng):  # type: ignore[no-untyped-def]
        t = time.thread_time()
        wl_ = sends_workload(cfg_, fab, rng, sends, delay_ps=dur)
        timed["flows"] = time.thread_time() - t
        return wl_

    def kernel(*a):  # type: ignore[no-untyped-def]
        t = time.thread_time()
        n = sim.run_kernel(*a)
        timed["kernel"] = time.thread_time() - t
        return n

    if args.setup_only:
        rng = np.random.default_rng(args.seed)
        n = build(cfg, build_fabric(cfg), rng).f_src.shape[0]
        peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
        print(
            f"{args.model} {args.hosts} nodes: {n:,} flows; setup {t_graph:.1f} s (DAG) + "
            f"{timed['flows']:.1f} s (flows); peak {peak_gb:.1f} GB"
        )
        return 0
    res = sim.simulate(replace(cfg), args.seed, flows=build, kernel=kernel)
    ev = res.stats["events"]
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    print(
        f"{args.model} {args.hosts} nodes {args.option} seed {args.seed}: JCT "
        f"{res.cct_us[0] / 1000:.1f} ms; {g.n_sends:,} sends + {g.n_compute:,} compute nodes; "
        f"setup {t_graph:.1f} s (DAG) + {timed['flows']:.1f} s (flows); kernel "
        f"{timed['kernel']:.1f} s, {ev:,} events, {ev / timed['kernel'] / 1e6:.1f} M events/s "
        f"per core; peak {peak_gb:.1f} GB"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
