"""Baseline (queue marking only) vs Symphony at several k, same seeds, in a few misalignment
scenarios; prints one text table per scenario.

    .venv/bin/python -m evaluation.run            # the default experiment
    .venv/bin/python -m evaluation.run --quick    # 3 seeds, smaller chunks: a smoke run
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace

from evaluation.sim import Result, SimConfig, simulate
from symphony.model.params import JobParams

# Misalignment sources (README explains the choice): start jitter alone, the paper's 1.13x
# load imbalance on one node of every ring, and a transient non-ECN background burst.
SCENARIOS: dict[str, SimConfig] = {
    "jitter": SimConfig(),
    "imbalance-1.13x": SimConfig(slow_frac=1 / 1.13),
    "imbalance-2x": SimConfig(slow_frac=0.5),
    "transient-bg": SimConfig(bg_rate=0.5, bg_duration=3000),
}
K_VALUES = (0.001, 0.01, 0.1)


def _run(args: tuple[str, str, SimConfig, int]) -> tuple[str, str, int, Result]:
    scenario, label, cfg, seed = args
    return scenario, label, seed, simulate(cfg, seed)


def variants(base: SimConfig, ks: tuple[float, ...]) -> dict[str, SimConfig]:
    out = {"baseline": replace(base, symphony=None)}
    for k in ks:
        out[f"symphony k={k:g}"] = replace(base, symphony=JobParams(k=k))
    return out


def table(scenario: str, cfg: SimConfig, rows: dict[str, dict[int, Result]]) -> str:
    bound = cfg.rings * cfg.nodes * cfg.steps * cfg.chunk / cfg.capacity
    base = rows["baseline"]
    base_med = statistics.median(r.cct for r in base.values())
    lines = [
        f"## {scenario}  (M={cfg.rings} rings x N={cfg.nodes}, S={cfg.chunk} pkts, "
        f"C={cfg.capacity:g} pkt/us, line={cfg.line_rate:g} pkt/us, slow_frac={cfg.slow_frac:.3f}, "
        f"bg={cfg.bg_rate:g}xC for {cfg.bg_duration} us; link bound {bound:.0f} us; "
        f"{len(base)} seeds)",
        "",
        "| variant | CCT mean (us) | CCT median (us) | median vs baseline | faster seeds "
        "| overlap mean | overlap max | Symphony marks | queue marks | CNPs | drops |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, res in rows.items():
        ccts = [r.cct for r in res.values()]
        med = statistics.median(ccts)
        faster = sum(res[s].cct < base[s].cct for s in res)
        lines.append(
            f"| {label} | {statistics.mean(ccts):.0f} | {med:.0f} | "
            f"{(med / base_med - 1) * 100:+.1f}% | "
            f"{'-' if label == 'baseline' else f'{faster}/{len(res)}'} | "
            f"{statistics.mean(r.overlap_mean for r in res.values()):.2f} | "
            f"{statistics.mean(r.overlap_max for r in res.values()):.1f} | "
            f"{statistics.mean(r.symphony_marks for r in res.values()):.0f} | "
            f"{statistics.mean(r.queue_marks for r in res.values()):.0f} | "
            f"{statistics.mean(r.cnps for r in res.values()):.0f} | "
            f"{statistics.mean(r.data_dropped + r.bg_dropped for r in res.values()):.0f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--quick", action="store_true", help="3 seeds, S=100: a smoke run")
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    ap.add_argument("--k", type=float, action="append", help="Symphony k values to compare")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)

    seeds = range(3 if args.quick else args.seeds)
    ks = tuple(args.k) if args.k else K_VALUES
    chosen = args.scenario or list(SCENARIOS)
    configs = {}
    for name in chosen:
        base = SCENARIOS[name]
        if args.quick:
            base = replace(base, chunk=100, bg_duration=base.bg_duration // 2)
        configs[name] = variants(base, ks)
    work = [
        (name, label, cfg, seed)
        for name, vs in configs.items()
        for label, cfg in vs.items()
        for seed in seeds
    ]
    t0 = time.monotonic()
    results: dict[str, dict[str, dict[int, Result]]] = {
        name: {label: {} for label in vs} for name, vs in configs.items()
    }
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for name, label, seed, res in pool.map(_run, work):
            results[name][label][seed] = res
    for name, rows in results.items():
        print(table(name, configs[name]["baseline"], rows))
        print()
    print(f"{len(work)} runs in {time.monotonic() - t0:.0f} s on {args.jobs} workers")


if __name__ == "__main__":
    main()
