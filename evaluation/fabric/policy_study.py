"""The marking-policy table of issue 21: each policy in every scenario, beside the DCQCN
baseline, strict priority for lagging flows (PQ) and the link-load bound.

    python -m evaluation.fabric.policy_study --seeds 10                  # choosing seeds 0-9
    python -m evaluation.fabric.policy_study --first-seed 100 --seeds 20 \
        --out docs/measurements/policy/heldout-32                         # held out: report
    python -m evaluation.fabric.policy_study --first-seed 100 --seeds 10 --only table1-128 \
        --out docs/measurements/policy/heldout-128

A cell is the median CCT of a policy's runs over the median of the baseline's on the same
setting and seeds. Sweeps (imbalance, chunk, k, passes) run `--sweep-seeds` seeds each (default:
half of --seeds). Runs are stored in OUT/runs.jsonl as they finish (resumable); OUT gets
runs.csv, table.md and the PNGs (plot_policies). docs/policy-study.md has the choice and the
results.
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from evaluation.fabric.collectives import lockstep_bound_us
from evaluation.fabric.config import Background, FabricConfig, SymphonyAt, SymphonyState
from evaluation.fabric.rows import FIELDS
from evaluation.fabric.scenarios import CHUNKS, IMBALANCES, K_SWEEP, KB, Run, base_config
from evaluation.fabric.sweep import RunStore, run_sweep
from symphony.model.params import JobParams


@dataclass(frozen=True)
class Policy:
    """A marking policy: the per-job parameters (k, the backlog gate, ...) and where Symphony
    keeps its state and runs (FabricConfig.symphony_state, symphony_at)."""

    params: JobParams = field(default_factory=JobParams)
    state: SymphonyState = "switch"
    at: SymphonyAt = "all"

    def apply(self, cfg: FabricConfig) -> FabricConfig:
        return replace(
            cfg, mode="symphony", symphony=self.params, symphony_state=self.state,
            symphony_at=self.at,
        )  # fmt: skip

    def with_k(self, k: float) -> Policy:
        return replace(self, params=replace(self.params, k=k))


GATED = JobParams(k=0.001, gate_depth=8)
# The policies of the table. "paper" is the paper's algorithm at its k; the candidate was chosen
# on the choosing seeds 0-9 (docs/policy-study.md, "The same sweep on all ten choosing seeds")
# before any held-out run.
POLICIES: dict[str, Policy] = {"paper": Policy(), "gate8-k0.001": Policy(GATED)}
CANDIDATE = "gate8-k0.001"
# --policies choose: the other candidates of the issue, alone and with the gate, for the
# choosing seeds only
CHOOSE: dict[str, Policy] = {
    **POLICIES,
    "port": Policy(state="port"),
    "port-k0.001": Policy(JobParams(k=0.001), state="port"),
    "port-gate8-k0.001": Policy(GATED, state="port"),
    "tor": Policy(at="tor"),
    "tor-gate8-k0.001": Policy(GATED, at="tor"),
}
# --policies gates: the first sweep's grid (docs/policy-study.md, choosing seeds 0-9), each gate
# at the paper's k and k swept at gates 0 and 8
GATES: dict[str, Policy] = {
    f"gate{g}-k{k:g}": Policy(JobParams(k=k, gate_depth=g))
    for g in (0, 2, 4, 8, 16, 32)
    for k in (0.001, 0.01, 0.1)
    if k == 0.01 or g in (0, 8)
}
POLICY_SETS = {"report": POLICIES, "choose": CHOOSE, "gates": GATES}
PASSES = (1, 2)
# Random arrivals (the paper's Fig. 7c, reduced to what our ring workload can express): four
# one-ring jobs of 8 nodes on 32, each starting at a seeded uniform time in the first half of
# the lockstep bound.
ARRIVAL_JOBS = 4


def _arrivals(cfg: FabricConfig, seed: int) -> FabricConfig:
    rng = random.Random(seed * 7919 + 21)  # its own stream, apart from the run's
    end = 0.5 * lockstep_bound_us(cfg)
    starts = sorted(rng.uniform(0.0, end) for _ in range(ARRIVAL_JOBS))
    return replace(cfg, jobs=ARRIVAL_JOBS, job_start_us=tuple(round(s, 1) for s in starts))


def _variants(
    scenario: str,
    param: str,
    cfg: FabricConfig,
    seeds: range,
    pq: bool = True,
    baseline: bool = True,
    policies: dict[str, Policy] = POLICIES,
    per_seed: Callable[[FabricConfig, int], FabricConfig] | None = None,
) -> list[Run]:
    modes: list[tuple[str, FabricConfig]] = []
    if baseline:
        modes.append(("baseline", replace(cfg, mode="baseline")))
    if pq:
        modes.append(("pq", replace(cfg, mode="pq")))
    modes += [(n, p.apply(cfg)) for n, p in policies.items()]
    return [
        Run(scenario, name, param, per_seed(c, s) if per_seed else c, s)
        for name, c in modes
        for s in seeds
    ]


def study_runs(
    seeds: range, sweep_seeds: range, seeds_128: range, policies: dict[str, Policy] = POLICIES
) -> dict[str, list[Run]]:
    """Every cell's runs, by scenario (the table's rows are (scenario, param))."""

    def cells(scenario: str, param: str, cfg: FabricConfig, seeds: range, **kw: Any) -> list[Run]:
        return _variants(scenario, param, cfg, seeds, policies=policies, **kw)

    rings = base_config(False, topology="rings", splits=1)
    static = replace(rings, routing="static")
    out: dict[str, list[Run]] = {
        "lockstep": cells("lockstep", "", replace(static, start_jitter_ns=0), seeds, pq=False),
        "rings": [
            r
            for p in PASSES
            for r in cells("rings", f"{p} pass", replace(rings, passes=p), sweep_seeds)
        ],
        "table1": cells("table1", "", base_config(False), seeds),
        "imbalance": [
            r
            for x in IMBALANCES
            for r in cells("imbalance", f"{x:g}x", replace(static, imbalance=x), sweep_seeds)
        ],
        "transient-bg": cells(
            "transient-bg", "", replace(static, background=Background(bursts=4)), seeds
        ),
        "two-jobs": cells(
            "two-jobs",
            "",
            replace(rings, jobs=2, job_start_us=(0.0, 0.25 * lockstep_bound_us(rings))),
            seeds,
        ),
        "random-arrivals": cells("random-arrivals", "", rings, seeds, per_seed=_arrivals),
        "chunk": [
            r
            for c in CHUNKS
            for r in cells("chunk", f"{c // KB}KB", replace(rings, chunk_bytes=c), sweep_seeds)
        ],
        # k swept under each policy's other parameters (the candidate keeps its gate), against
        # one baseline
        "k": _variants("k", "", rings, sweep_seeds, pq=False, policies={})
        + [
            r
            for k in K_SWEEP
            for r in _variants(
                "k",
                f"{k:g}",
                rings,
                sweep_seeds,
                pq=False,
                baseline=False,
                policies={n: p.with_k(k) for n, p in policies.items()},
            )
        ],
        "table1-128": cells("table1-128", "", base_config(False, hosts=128), seeds_128),
    }
    return out


def table(rows: list[dict[str, str]], names: list[str] | None = None) -> str:
    """policy x scenario: median CCT vs the baseline's, with PQ and the bound beside."""
    groups: dict[tuple[str, str, str], list[dict[str, str]]] = {}
    for r in rows:
        groups.setdefault((r["scenario"], r["param"], r["variant"]), []).append(r)
    cells = sorted({(s, p) for s, p, _ in groups}, key=lambda sp: _order(*sp))
    names = names or list(POLICIES)
    head = (
        "| scenario | param | seeds | baseline (ms) | PQ | "
        + " | ".join(names)
        + " | bound (ms) | baseline x bound |"
    )
    out = [head, "|" + "---|" * 2 + "---:|" * (5 + len(names))]
    for s, p in cells:
        base = groups.get((s, p, "baseline")) or groups.get((s, "", "baseline"))
        if not base:
            continue
        b = statistics.median(float(r["cct_us"]) for r in base)

        def rel(v: str, s: str = s, p: str = p, b: float = b) -> str:
            g = groups.get((s, p, v))
            if not g:
                return "-"
            return f"{statistics.median(float(r['cct_us']) for r in g) / b - 1:+.1%}"

        bound = statistics.median(float(r["bound_us"]) for r in base)
        xb = statistics.median(float(r["x_bound"]) for r in base)
        pol = " | ".join(rel(n) for n in names)
        out.append(
            f"| {s} | {p} | {len(base)} | {b / 1e3:.1f} | {rel('pq')} | {pol} | "
            f"{bound / 1e3:.1f} | {xb:.2f} |"
        )
    return "\n".join(out) + "\n"


ORDER = (
    "lockstep",
    "rings",
    "table1",
    "table1-128",
    "imbalance",
    "transient-bg",
    "two-jobs",
    "random-arrivals",
    "chunk",
    "k",
)


def _order(scenario: str, param: str) -> tuple[int, float, str]:
    num = param.split(" ")[0].removesuffix("KB").removesuffix("x")
    try:
        x = float(num)
    except ValueError:
        x = -1.0
    return (ORDER.index(scenario) if scenario in ORDER else 99, x, param)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--sweep-seeds", type=int, help="seeds per sweep point (default seeds/2)")
    ap.add_argument("--seeds-128", type=int, default=0, help="seeds of table1-128 (slow)")
    ap.add_argument("--only", action="append", choices=ORDER, help="run only these scenarios")
    ap.add_argument(
        "--policies",
        choices=sorted(POLICY_SETS),
        default="report",
        help="report: the paper's and the candidate (POLICIES); choose: every candidate "
        "(CHOOSE); gates: the first sweep's gate x k grid (GATES)",
    )
    ap.add_argument("--variant", action="append", help="run only these variants (e.g. baseline)")
    ap.add_argument(
        "--step-index",
        choices=("collective", "sport"),
        default="collective",
        help="the step Symphony reads: the collective's (default) or the UDP source port's "
        "per-pair message counter, what Astra-Sim's ns-3 frontend writes (FabricConfig)",
    )
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cluster", metavar="ADDR", help="a Dask scheduler (see __main__)")
    ap.add_argument("--out", type=Path, default=Path("build/policy-study"))
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)
    first = args.first_seed
    seeds = range(first, first + args.seeds)
    sweep = range(first, first + (args.sweep_seeds or max(1, args.seeds // 2)))
    big = range(first, first + (args.seeds_128 or args.seeds))
    policies = POLICY_SETS[args.policies]
    by_scenario = study_runs(seeds, sweep, big, policies)
    wanted = args.only or [s for s in ORDER if s != "table1-128" or args.seeds_128]
    runs = [
        replace(r, cfg=replace(r.cfg, step_index=args.step_index))
        for s in wanted
        for r in by_scenario[s]
        if not args.variant or r.variant in args.variant
    ]
    runs.sort(key=lambda r: -r.cfg.hosts * lockstep_bound_us(r.cfg))  # longest first
    args.out.mkdir(parents=True, exist_ok=True)
    store = RunStore(args.out / "runs.jsonl")
    try:
        results = run_sweep(runs, store, workers=args.jobs, cluster=args.cluster)
    finally:
        store.close()
    rows = sorted(
        (r.row for r in results),
        key=lambda r: (_order(str(r["scenario"]), str(r["param"])), str(r["variant"]), r["seed"]),
    )
    with open(args.out / "runs.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    seeds_text = f"seeds {seeds.start}-{seeds.stop - 1} (sweeps {sweep.start}-{sweep.stop - 1})"
    text = f"Median CCT vs the DCQCN baseline, {seeds_text}\n\n" + table(
        [{k: str(v) for k, v in r.items()} for r in rows], list(policies)
    )
    (args.out / "table.md").write_text(text)
    print(text)
    if not args.no_plots:
        from evaluation.fabric.plots import plot_policies

        for p in plot_policies(args.out, list(policies), {r.key: r for r in results}, runs):
            print("wrote", p)


if __name__ == "__main__":
    main()
