"""Where the simulator predicts Symphony's gain on a fabric this machine can emulate (issue 44).

Before a bmv2 run is spent on it, the fabric simulator searches the configurations the bmv2
leaf-spine can carry here (`make experiment-fabric`'s own `FabricSetup`, so a chosen row can be
run as it is) for the one where the shipped policy (gate 8, k = 0.001) shortens the collective
most, under each NIC profile, on **choosing seeds** (0-9 by default) that the bmv2 runs never use
(they take 100 on). Every run is a task of `evaluation.fabric.sweep` on Dask: a `LocalCluster` of
this machine's cores, or the scheduler `--cluster` names.

What this machine can emulate (docs/experiments.md, "Fabric: the sustainable frame rate"): at
most 4 bmv2 switches (2 leaves, 1-2 spines), up to 8 hosts in the one loop, and about 8,000
data frames per second in all without loss; but at that load a flow alone at line rate waits
~150 frames in the fabric (the simulator: 1), so the search plans 4,000 in all, a setup of n
hosts running its links at 4,000 / n frames/s (docs/experiments.md, "One NIC in both
instruments"). That rate changes only the emulation's time scale, not what the simulator
predicts.

    python -m evaluation.hosts.regime_search                 # -> build/regime-search/
    python -m evaluation.hosts.regime_search --seeds 10 --profile dcqcn-paper
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from collections import defaultdict
from dataclasses import dataclass, replace
from itertools import product
from pathlib import Path
from typing import Any

from evaluation.fabric.scenarios import Run
from evaluation.fabric.sweep import STORE_NAME, RunStore, run_sweep
from evaluation.hosts import experiments as ex
from evaluation.hosts import fabric_experiment as fx
from evaluation.hosts.fabric_experiment import FabricSetup
from evaluation.hosts.testbed import ROOT

FRAMES_PER_S = 4000.0  # all hosts together (the 2x2x4 experiment: 8 hosts x 500)
SPINES = (1, 2)
HOSTS_PER_LEAF = (2, 3, 4)
RINGS = (1, 2)
CHUNKS = (100, 250, 500, 1000)  # packets per step
PROFILES = ("dcqcn-paper", "hpcc-config")
VARIANTS = fx.VARIANTS  # baseline, the paper's policy, the shipped one
BASE, PAPER, SHIPPED = (v.name for v in VARIANTS)


@dataclass(frozen=True)
class Candidate:
    setup: FabricSetup

    @property
    def label(self) -> str:
        s = self.setup
        return f"2x{s.spines}x{s.hosts_per_leaf} rings={s.rings} chunk={s.chunk_packets}"


def candidates() -> list[Candidate]:
    out = []
    for spines, hpl, rings, chunk in product(SPINES, HOSTS_PER_LEAF, RINGS, CHUNKS):
        hosts = 2 * hpl
        if hosts % rings or hosts // rings < 3:  # a ring of at least 3 members
            continue
        cand = Candidate(
            FabricSetup(
                leaves=2,
                spines=spines,
                hosts_per_leaf=hpl,
                line_pps=FRAMES_PER_S / hosts,
                rings=rings,
                chunk_packets=chunk,
                queue_depth=1000,
                jitter_real_us=2.0,
                sample_ms=50.0,
            )
        )
        try:
            cand.setup.sim_config(ex.BASELINE)  # rings must sit evenly on the leaves
        except ValueError:
            continue
        out.append(cand)
    return out


def runs_of(cands: list[Candidate], profiles: list[str], seeds: list[int]) -> list[Run]:
    return [
        Run(c.label, v.name, p, replace(c.setup, profile=p).sim_config(v), s)
        for c in cands
        for p in profiles
        for v in VARIANTS
        for s in seeds
    ]


def table(runs: list[Run], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (configuration, profile): median CCT per variant and the policies' changes."""
    cct: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for run, row in zip(runs, rows, strict=True):
        cct[run.scenario, run.param, run.variant].append(float(row["cct_us"]))
    out = []
    for label, prof in dict.fromkeys((r.scenario, r.param) for r in runs):
        base = statistics.median(cct[label, prof, BASE])
        entry: dict[str, Any] = {"config": label, "profile": prof, "baseline_us": base}
        for name, key in ((SHIPPED, "shipped"), (PAPER, "paper")):
            med = statistics.median(cct[label, prof, name])
            entry[f"{key}_us"] = med
            entry[f"{key}_change_pct"] = (med / base - 1) * 100
            # how many choosing seeds the policy shortened on their own (paired by seed)
            pairs = zip(cct[label, prof, name], cct[label, prof, BASE], strict=True)
            entry[f"{key}_seeds_faster"] = sum(a < b for a, b in pairs)
        entry["seeds"] = len(cct[label, prof, BASE])
        out.append(entry)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "build/regime-search")
    ap.add_argument("--seeds", type=int, default=10, help="choosing seeds 0..N-1")
    ap.add_argument("--profile", action="append", choices=PROFILES)
    ap.add_argument("--cluster", help="a Dask scheduler's address (default: a LocalCluster)")
    ap.add_argument("--workers", type=int, default=2, help="the LocalCluster's workers")
    args = ap.parse_args(argv)
    if args.seeds >= 100:
        print("choosing seeds must stay below 100 (the bmv2 runs' held-out seeds)", file=sys.stderr)
        return 2
    profiles = args.profile or list(PROFILES)
    cands = candidates()
    runs = runs_of(cands, profiles, list(range(args.seeds)))
    args.out.mkdir(parents=True, exist_ok=True)
    store = RunStore(args.out / STORE_NAME)
    if args.cluster:
        results = run_sweep(runs, store, cluster=args.cluster)
    else:
        from distributed import LocalCluster

        with LocalCluster(
            n_workers=args.workers, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster:
            results = run_sweep(runs, store, cluster=cluster.scheduler_address)
    store.close()
    rows = table(runs, [r.row for r in results])
    with (args.out / "search.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print("| profile | configuration | baseline (ms, real) | shipped | seeds faster | paper's |")
    print("|---|---|---:|---:|---:|---:|")
    for prof in profiles:
        best = sorted(
            (r for r in rows if r["profile"] == prof), key=lambda r: r["shipped_change_pct"]
        )
        for r in best[:5]:
            print(
                f"| {prof} | {r['config']} | {r['baseline_us'] / 1e3:.2f} | "
                f"{r['shipped_change_pct']:+.1f} % | {r['shipped_seeds_faster']}/{r['seeds']} | "
                f"{r['paper_change_pct']:+.1f} % |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
