"""The backlog gate against the paper's policy (issue 21): a first sweep, on choosing seeds.

    python -m evaluation.fabric.gate_study --seeds 4            # seeds 0-3: choose on these
    python -m evaluation.fabric.gate_study --first-seed 100 --seeds 20   # held out: report

Every scenario's baseline (and PQ where it has one) beside Symphony at each (gate, k) of the
grid below; prints the median CCT of each variant against the baseline's. Runs are kept in
OUT/runs.jsonl (resumable, like `python -m evaluation.fabric`). docs/policy-study.md.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from statistics import median

from evaluation.fabric.scenarios import Run, scenario_runs
from evaluation.fabric.sweep import RunStore, run_sweep

SCENARIOS = ("lockstep", "table1", "imbalance", "transient-bg", "two-jobs")
IMBALANCES = ("1.1", "1.5")
GATES = (0, 2, 4, 8, 16, 32)
# k is swept at the paper's policy (gate 0) and at gate 8 only.
KS = (0.001, 0.01, 0.1)
K_GATES = (0, 8)


def variants(run: Run) -> list[Run]:
    if run.variant != "symphony":
        return [run]
    out = []
    for g in GATES:
        for k in KS:
            if k != 0.01 and g not in K_GATES:
                continue
            params = replace(run.cfg.symphony, gate_depth=g, k=k)
            tag = f"gate{g}" + ("" if k == 0.01 else f"/k{k:g}")
            out.append(
                Run(run.scenario, tag, run.param, replace(run.cfg, symphony=params), run.seed)
            )
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("build/gate-study"))
    args = ap.parse_args()
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    runs = [
        v
        for name in SCENARIOS
        for r in scenario_runs(name, seeds)
        if name != "imbalance" or r.param in IMBALANCES
        for v in variants(r)
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    results = run_sweep(runs, RunStore(args.out / "runs.jsonl"), workers=args.jobs)
    cct: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r, x in zip(runs, results, strict=True):
        cct.setdefault((r.scenario, r.param), {}).setdefault(r.variant, []).append(
            x.row["cct_us"] / 1e3
        )
    for (scenario, param), by_variant in cct.items():
        base = median(by_variant["baseline"])
        cells = "  ".join(
            f"{v}={median(c) / base - 1:+.1%}" for v, c in by_variant.items() if v != "baseline"
        )
        print(f"{scenario:13s} {param:5s} baseline {base:8.1f} ms  {cells}")


if __name__ == "__main__":
    main()
