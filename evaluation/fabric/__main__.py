"""Run the fabric experiments: CSV, summary tables (markdown) and PNG plots.

python -m evaluation.fabric                          # every scenario, 20 seeds -> build/evaluation
python -m evaluation.fabric --scenario ecmp --seeds 20
python -m evaluation.fabric --quick --seeds 2        # the small configuration of each
python -m evaluation.fabric --no-pfc --out build/evaluation-nopfc   # lossy: drop-tail, go-back-N
python -m evaluation.fabric --scenario ecmp --profile hpcc-run-dcqcn  # another NIC profile
python -m evaluation.fabric --scenario table1 --ack-queue control    # ACKs in a priority class
python -m evaluation.fabric --preset v1 --out build/evaluation-v1    # the first version's defaults
python -m evaluation.fabric --scenario 2d --ecmp ns3 --passes 4 --splits 4 --active-chunks 2
python -m evaluation.fabric --scenario ecmp --fabric multipod --hosts 256 --oversub 4
python -m evaluation.fabric --cluster tcp://scheduler:8786   # the runs as tasks on a Dask cluster

Runs are stored as they finish in OUT/runs.jsonl: run again with the same arguments and --out to
run only what is missing (--fresh starts over).
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from evaluation.fabric.collectives import lockstep_bound_us
from evaluation.fabric.dcqcn import DEFAULT_PROFILE, PROFILES, AckQueue, Dcqcn
from evaluation.fabric.rows import FIELDS
from evaluation.fabric.scenarios import PRESETS, SCENARIOS, Run, scenario_runs
from evaluation.fabric.sweep import STORE_NAME, RunStore, run_key, run_sweep, series_arrays

CONFIG_FLAGS = (
    "topology",
    "dims",
    "phases",
    "splits",
    "active_chunks",
    "passes",
    "step_index",
    "ecmp",
    "fabric",
    "hosts",
    "spines",
    "pods",
    "cores",
    "oversub",
)


def _ack_queue(cc: Dcqcn, queue: AckQueue) -> Dcqcn:
    """Profile `cc` with ACKs in `queue`, named so if that is not the profile's own."""
    if cc.ack_queue == queue:
        return cc
    return replace(cc, ack_queue=queue, name=f"{cc.name}+ack-{queue}")


def summarise(rows: list[dict[str, object]]) -> str:
    """One markdown table per scenario: median CCT (and vs baseline), max overlap."""
    out = []
    by_scn: dict[str, list[dict[str, object]]] = {}
    for r in rows:
        by_scn.setdefault(str(r["scenario"]), []).append(r)
    for scn, rs in by_scn.items():
        pfc = "PFC on" if all(int(r["pfc"]) for r in rs) else "PFC off"
        profiles = ", ".join(sorted({str(r["profile"]) for r in rs}))
        out += [
            f"### {scn} ({pfc}, {profiles})",
            "",
            "| variant | param | seeds | median CCT (ms) | vs baseline | x lockstep | "
            "bound (ms) | x bound | mean CCT (ms) | mean vs baseline | "
            "max overlap (median) | mean overlap | Symphony marks | CNPs | drops | "
            "PFC pauses | capped |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        groups: dict[tuple[str, str], list[dict[str, object]]] = {}
        for r in rs:
            groups.setdefault((str(r["variant"]), str(r["param"])), []).append(r)

        def base(param: str, groups: dict = groups) -> list[float]:
            b = groups.get(("baseline", param)) or groups.get(("baseline", "")) or []
            return [float(x["cct_us"]) for x in b]

        for (var, param), g in groups.items():
            med = statistics.median(float(x["cct_us"]) for x in g)
            mean = statistics.mean(float(x["cct_us"]) for x in g)
            b = base(param)
            rel = f"{(med / statistics.median(b) - 1) * 100:+.1f}%" if b else "-"
            rel_mean = f"{(mean / statistics.mean(b) - 1) * 100:+.1f}%" if b else "-"
            lock = float(g[0]["lockstep_us"])
            # the bound depends on the run's paths: median over the group's runs, and the
            # median of each run's own CCT / bound
            bnd = statistics.median(float(x["bound_us"]) for x in g)
            xb = statistics.median(float(x["x_bound"]) for x in g)
            out.append(
                f"| {var} | {param} | {len(g)} | {med / 1000:.1f} | {rel} | {med / lock:.2f} | "
                f"{bnd / 1000:.1f} | {xb:.2f} | {mean / 1000:.1f} | {rel_mean} | "
                f"{statistics.median(int(x['max_overlap']) for x in g):g} | "
                f"{statistics.mean(float(x['mean_overlap']) for x in g):.2f} | "
                f"{statistics.mean(int(x['symphony_marks']) for x in g):.0f} | "
                f"{statistics.mean(int(x['cnps']) for x in g):.0f} | "
                f"{statistics.mean(int(x['dropped']) for x in g):.0f} | "
                f"{statistics.mean(int(x['pfc_pauses']) for x in g):.0f} | "
                f"{sum(1 for x in g if int(x['error']) & 4)} |"
            )
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scenario", action="append", choices=SCENARIOS)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--sweep-seeds", type=int, default=10, help="seeds per point of a sweep")
    ap.add_argument("--seeds-128", type=int, default=2, help="seeds for ecmp-128 (slow)")
    ap.add_argument("--quick", action="store_true", help="the small configuration of each")
    ap.add_argument(
        "--preset",
        choices=sorted(PRESETS),
        default="table1",
        help="the defaults every scenario starts from (table1: the paper's stack; v1: the "
        "first version's)",
    )
    ap.add_argument("--jobs", "--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-pfc", action="store_true", help="lossy fabric: drop-tail, go-back-N")
    ap.add_argument(
        "--profile",
        choices=sorted(PROFILES),
        help="the NIC's DCQCN profile (evaluation/fabric/dcqcn.py; default: the preset's, "
        f"{DEFAULT_PROFILE} for table1)",
    )
    ap.add_argument(
        "--ack-queue",
        choices=("data", "control"),
        help="the switch queue ACKs/NACKs take (Dcqcn.ack_queue; default: the profile's, data: "
        "FIFO behind their flow's data as in HPCC; control: a strict-priority class)",
    )
    ap.add_argument("--variant", action="append", help="run only these variants (e.g. baseline)")
    # workload and fabric (FabricConfig fields; unset = each scenario's default)
    ap.add_argument("--topology", choices=("rings", "2d"), help="logical topology")
    ap.add_argument("--dims", type=int, nargs=2, metavar=("N0", "N1"), help="2d ring dims")
    ap.add_argument("--phases", choices=("localBWAware", "baseline"), help="2d phase order")
    ap.add_argument("--splits", type=int, help="preferred-dataset-splits (chunks)")
    ap.add_argument("--active-chunks", type=int, help="active-chunks-per-dimension")
    ap.add_argument("--passes", type=int, help="collectives back to back per NPU")
    ap.add_argument("--step-index", choices=("collective", "sport"), help="Symphony's step")
    ap.add_argument("--ecmp", choices=("salted", "ns3", "switch"), help="ECMP hash")
    ap.add_argument("--fabric", choices=("2tier", "nonblocking", "multipod"))
    ap.add_argument("--hosts", type=int, help="hosts (256/512: with --fabric multipod)")
    ap.add_argument("--spines", type=int, help="spines (aggs) per pod")
    ap.add_argument("--pods", type=int, help="multipod: pods (default hosts / 128)")
    ap.add_argument("--cores", type=int, help="multipod: core switches (default one per pod)")
    ap.add_argument("--oversub", type=float, help="multipod: core oversubscription N (1:N)")
    ap.add_argument(
        "--cluster",
        metavar="ADDR",
        help="run on this Dask distributed scheduler (e.g. tcp://host:8786) instead of a local "
        "process pool; the workers need this repository and its environment",
    )
    ap.add_argument(
        "--fresh",
        action="store_true",
        help=f"forget the runs stored in OUT/{STORE_NAME} (default: run only what is missing)",
    )
    ap.add_argument("--out", type=Path, default=Path("build/evaluation"))
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)

    options = {k: getattr(args, k) for k in CONFIG_FLAGS if getattr(args, k) is not None}
    if "dims" in options:
        options["dims"] = tuple(options["dims"])
    runs: list[Run] = []
    for name in args.scenario or SCENARIOS:
        n = args.seeds
        if not args.quick and name in ("ecmp-128", "2d-128", "table1-128"):
            n = args.seeds_128
        elif not args.quick and name in ("imbalance", "k-sweep", "chunk-sweep"):
            n = args.sweep_seeds
        runs += scenario_runs(name, range(n), quick=args.quick, options=options, preset=args.preset)
    if args.variant:
        runs = [r for r in runs if r.variant in args.variant]
    if args.no_pfc:
        runs = [replace(r, cfg=replace(r.cfg, pfc=False)) for r in runs]
    if args.profile:
        runs = [replace(r, cfg=replace(r.cfg, dcqcn=args.profile)) for r in runs]
    if args.ack_queue:
        # the profile renamed too: runs.csv and the summary name it, so "+ack-control" shows
        runs = [
            replace(r, cfg=replace(r.cfg, dcqcn=_ack_queue(r.cfg.cc, args.ack_queue))) for r in runs
        ]
    # Longest first, so the pool does not end on one slow run.
    runs.sort(key=lambda r: -r.cfg.hosts * lockstep_bound_us(r.cfg))
    args.out.mkdir(parents=True, exist_ok=True)
    store_path = args.out / STORE_NAME
    if args.fresh:
        store_path.unlink(missing_ok=True)
    store = RunStore(store_path)
    ran = len({run_key(r) for r in runs} - set(store.results))
    t0 = time.monotonic()
    try:
        results = run_sweep(runs, store, workers=args.jobs, cluster=args.cluster)
    finally:
        store.close()
    wall = time.monotonic() - t0
    rows = [r.row for r in results]
    rows.sort(key=lambda r: (str(r["scenario"]), str(r["variant"]), str(r["param"]), r["seed"]))
    with open(args.out / "runs.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    np.savez_compressed(args.out / "series.npz", **series_arrays(zip(runs, results, strict=True)))
    events = sum(int(r["events"]) for r in rows)
    cpu = sum(float(r["wall_s"]) for r in rows)
    text = summarise(rows)
    capped = sum(1 for r in rows if int(r["error"]) & 4)
    other = sum(1 for r in rows if int(r["error"]) & ~4)
    text += (
        f"\n{capped} runs hit the {runs[0].cfg.max_ms / 1000:g} s simulated-time cap (column "
        f"capped; their CCT is the cap), {other} runs ended with another error flag\n"
    )
    where = f"on {args.cluster}" if args.cluster else f"on {args.jobs} local workers"
    text += (
        f"\n{len(rows)} runs ({ran} run now {where} in {wall:.0f} s wall, the others read from "
        f"{STORE_NAME}), {events / 1e6:.0f} M events; kernel {events / cpu / 1e6:.1f} M "
        f"events/s per core\n"
    )
    (args.out / "summary.md").write_text(text)
    print(text)
    if not args.no_plots:
        from evaluation.fabric.plots import plot_all

        for p in plot_all(args.out):
            print("wrote", p)


if __name__ == "__main__":
    main()
