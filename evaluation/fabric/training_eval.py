"""The paper's training-job figures in the simulator (issue 47): Table 2 (gradient
synchronisation of VGG16, ResNet50 and the Transformer at 128 and 512 nodes) and Fig. 6 (the
Transformer as its compute shrinks 1x-64x), each deployment against DCQCN alone on the same
held-out seeds, under ACKs behind data and ACKs in a priority class.

    python -m evaluation.fabric.training_eval --out build/training            # local pool
    python -m evaluation.fabric.training_eval --cluster local --jobs 2        # Dask LocalCluster
    python -m evaluation.fabric.training_eval --cluster tcp://sched:8786      # Dask anywhere

A run is one training iteration (`training.simulate_training`) of a model's Astra-Sim workload
file on Table 1's fabric (2D ring, 32 x 4 at 128 nodes; the multipod fabric, 1:8, at 512, as
`regime_map` builds them) with a deployment of `regime_map.OPTIONS`. Resumable: each result goes
to `runs.jsonl` as it arrives and a rerun runs only what the store lacks (`--report-only`: the
tables and plots from the store). docs/training.md has the choices and the results.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import statistics
import time
from dataclasses import dataclass, replace
from pathlib import Path

from evaluation.fabric.arrivals import (
    ARRIVALS_VERSION,
    STREAM_VERSION,
    arrivals_graph,
    draw_jobs,
    draw_stream,
)
from evaluation.fabric.config import LONG_RUN_MAX_MS, FabricConfig
from evaluation.fabric.kernel import RESULTS_VERSION
from evaluation.fabric.regime_map import BY_NAME, Regime, config
from evaluation.fabric.sim import simulate
from evaluation.fabric.sweep import Result, RunStore, config_hash, local_cluster, run_sweep
from evaluation.fabric.training import (
    COMPUTE_BASE,
    TRAINING_VERSION,
    Scales,
    graph_builder,
    simulate_training,
)
from evaluation.fabric.workload_text import read_text

WORKLOADS = Path(__file__).resolve().parents[1] / "workloads"
MODELS = {
    "vgg16": WORKLOADS / "VGG16_DataParallel.txt",
    "resnet50": WORKLOADS / "astra-sim" / "Resnet50_DataParallel.txt",
    "transformer": WORKLOADS / "astra-sim" / "Transformer_HybridParallel.txt",
}
# what the runs compare: DCQCN alone, the shipped policy and the paper's, each under both ACK
# queues (regime_map.OPTIONS' names)
OPTIONS = ("dcqcn", "shipped", "paper", "ack", "ack+shipped", "ack+paper")
# against which deployment a row's change is counted: the same ACK queue without Symphony
REFERENCE = {"dcqcn": "dcqcn", "shipped": "dcqcn", "paper": "dcqcn"}
REFERENCE |= {"ack": "dcqcn", "ack+shipped": "ack", "ack+paper": "ack"}
FIG6_REDUCTIONS = (1, 2, 4, 8, 16, 32, 64)  # compute / r
SEEDS = range(100, 103)  # held out: nothing in the simulator was chosen on them
# the paper's Table 2 (ms): (baseline, Symphony)
PAPER_TABLE2 = {
    ("vgg16", 128): (2450.34, 1220.22),
    ("vgg16", 512): (2676.09, 1220.30),
    ("resnet50", 128): (977.27, 739.85),
    ("resnet50", 512): (1034.91, 819.31),
    ("transformer", 128): (96389.86, 96324.31),
}
FIELDS = (
    "part",
    "model",
    "hosts",
    "option",
    "compute_reduction",
    "seed",
    "jct_ms",
    "comm_free_ms",
    "exposed_ms",
    "sync_ms",
    "symphony_marks",
    "queue_marks",
    "events",
    "wall_s",
    "error",
    "jobs",  # fig7c: JSON [[Job_ID, nodes, MB, passes, arrival ms, JCT ms], ...]
)
# Fig. 7c's medians (the paper, sec. 4.5): normalised JCT change by job size
PAPER_FIG7C = {16: "-1.53 %", 32: "-", 64: "about -17 %"}
PAPER_FIG7C_RATIO = {16: 1 - 0.0153, 64: 1 - 0.17}
# Fig. 7c's two forms: one wave of 3-4 jobs with passes / 8, and the stream (arrivals.py)
FIG7C_PARTS = ("fig7c", "fig7c-stream")


# A run's simulated-time cap (FabricConfig.max_ms is 20 s, shorter than a 128-node
# Transformer iteration). Not part of a run's key: a run that stays under a cap gives the same
# result under any larger one, and one that hits it is flagged (`error` 4) in the table.
RUN_CAP_MS = LONG_RUN_MAX_MS


@dataclass(frozen=True)
class TrainingRun:
    part: str  # table2 | fig6 | fig7c | fig7c-stream
    model: str  # fig7c: "arrivals"; fig7c-stream: "stream"
    hosts: int
    option: str
    seed: int
    compute_reduction: int = 1  # Fig. 6: compute times / this

    @property
    def cfg(self) -> FabricConfig:
        return config(Regime("2d", "windowed", self.hosts, 8 << 20), BY_NAME[self.option])


def _workload_digest(model: str) -> str:
    if model == "arrivals":  # the jobs are drawn by arrivals.py's rules: its version
        return f"arrivals-{ARRIVALS_VERSION}"
    if model == "stream":
        return f"stream-{STREAM_VERSION}"
    return hashlib.sha256(MODELS[model].read_bytes()).hexdigest()[:12]


def training_key(run: TrainingRun) -> str:
    """The store's key: the run's names, its workload file's and config's digests, the
    kernel's results version."""
    cfg_digest = config_hash(run)  # type: ignore[arg-type]  # asdict(run.cfg) is all it reads
    return "|".join(
        (
            "training",
            run.part,
            run.model,
            str(run.hosts),
            run.option,
            str(run.compute_reduction),
            str(run.seed),
            _workload_digest(run.model),
            cfg_digest,
            f"v{RESULTS_VERSION}",
            f"t{TRAINING_VERSION}",
        )
    )


def _execute_arrivals(run: TrainingRun) -> Result:
    t0 = time.perf_counter()
    cfg = replace(run.cfg, max_ms=RUN_CAP_MS)
    if run.part == "fig7c-stream":
        jobs, waits = draw_stream(cfg.hosts, run.seed)
    else:
        jobs, waits = draw_jobs(cfg.hosts, run.seed), None
    g, starts = arrivals_graph(cfg, jobs, waits)
    res = simulate(cfg, run.seed, flows=graph_builder(g))
    ns = g.n_sends
    out = []
    for jb in jobs:
        arrived = float(res.flow_done_us[ns + (starts[jb.job] - COMPUTE_BASE)].min())
        jct = (float(res.cct_us[jb.job - 1]) - arrived) / 1000
        out.append([jb.job, len(jb.hosts), jb.size_bytes >> 20, jb.passes, arrived / 1000, jct])
    row = {f: "" for f in FIELDS}
    row |= {
        "part": run.part,
        "model": run.model,
        "hosts": run.hosts,
        "option": run.option,
        "compute_reduction": 1,
        "seed": run.seed,
        "jct_ms": round(max(o[5] for o in out), 6),
        "symphony_marks": res.stats["symphony_marks"],
        "queue_marks": res.stats["queue_marks"],
        "events": res.stats["events"],
        "wall_s": round(time.perf_counter() - t0, 2),
        "error": res.stats["error"],
        "jobs": json.dumps([[round(v, 6) if isinstance(v, float) else v for v in o] for o in out]),
    }
    return Result(training_key(run), row, None)


def execute_training(run: TrainingRun) -> Result:
    """One iteration (or Fig. 7c's jobs), anywhere (a pool process or a Dask worker)."""
    if run.part in FIG7C_PARTS:
        return _execute_arrivals(run)
    t0 = time.perf_counter()
    r = simulate_training(
        read_text(MODELS[run.model]),
        replace(run.cfg, max_ms=RUN_CAP_MS),
        run.seed,
        Scales(compute=1 / run.compute_reduction),
    )
    row = {
        "part": run.part,
        "model": run.model,
        "hosts": run.hosts,
        "option": run.option,
        "compute_reduction": run.compute_reduction,
        "seed": run.seed,
        "jct_ms": round(r.jct_ms, 6),
        "comm_free_ms": round(r.comm_free_ms, 6),
        "exposed_ms": round(r.exposed_comm_ms, 6),
        "sync_ms": round(r.sync_ms, 6),
        "symphony_marks": r.stats["symphony_marks"],
        "queue_marks": r.stats["queue_marks"],
        "events": r.stats["events"],
        "wall_s": round(time.perf_counter() - t0, 2),
        "error": r.stats["error"],
        "jobs": "",
    }
    return Result(training_key(run), row, None)


def grid(
    parts: list[str], hosts: list[int], models: list[str], seeds: range, options: list[str]
) -> list[TrainingRun]:
    runs = []
    if "table2" in parts:
        for m in models:
            for h in hosts:
                runs += [TrainingRun("table2", m, h, o, s) for o in options for s in seeds]
    if "fig7c" in parts:
        runs += [TrainingRun("fig7c", "arrivals", 128, o, s) for o in options for s in seeds]
    if "fig7c-stream" in parts:
        runs += [TrainingRun("fig7c-stream", "stream", 128, o, s) for o in options for s in seeds]
    if "fig6" in parts:
        for h in hosts:
            for r in FIG6_REDUCTIONS:
                runs += [
                    TrainingRun("fig6", "transformer", h, o, s, r) for o in options for s in seeds
                ]
    return runs


def _median(rows: list[dict]) -> float:
    return statistics.median(float(r["jct_ms"]) for r in rows)


def report(rows: list[dict], out: Path) -> Path:
    """table.md: per (part, model, hosts, compute reduction) each deployment's median JCT,
    its runs' range, its change against its reference, and the paper's figure beside."""
    cells: dict[tuple, dict[str, list[dict]]] = {}
    for r in rows:
        if r["part"] in FIG7C_PARTS:
            continue  # per job: fig7c_ratios below
        k = (r["part"], r["model"], int(r["hosts"]), int(r["compute_reduction"]))
        cells.setdefault(k, {}).setdefault(r["option"], []).append(r)
    lines = []
    if cells:
        lines += [
            "| part | model | nodes | compute / | deployment | JCT ms: median [min, max] "
            "(seeds) | vs reference | compute alone ms | the paper |",
            "|---|---|---:|---:|---|---:|---:|---:|---|",
        ]
    for (part, model, hosts, red), by in sorted(cells.items()):
        for opt in OPTIONS:
            rs = by.get(opt)
            if not rs:
                continue
            med = _median(rs)
            jcts = sorted(float(r["jct_ms"]) for r in rs)
            ref = by.get(REFERENCE[opt])
            change = (
                f"{100 * (med / _median(ref) - 1):+.1f} % vs {REFERENCE[opt]}"
                if ref and opt != REFERENCE[opt]
                else "-"
            )
            paper = ""
            if part == "table2" and (model, hosts) in PAPER_TABLE2 and opt in ("dcqcn", "paper"):
                base, sym = PAPER_TABLE2[model, hosts]
                paper = (
                    f"{base:.2f}"
                    if opt == "dcqcn"
                    else f"{sym:.2f} ({100 * (sym / base - 1):+.1f} %)"
                )
            errors = sorted({int(r["error"]) for r in rs} - {0})
            if errors:  # capped (4), stuck (8), ...: the JCT is not the run's
                change += f" **error {errors}**"
            lines.append(
                f"| {part} | {model} | {hosts} | {red} | {opt} | {med:.1f} [{jcts[0]:.1f}, "
                f"{jcts[-1]:.1f}] ({len(rs)}) | {change} | {float(rs[0]['comm_free_ms']):.2f} "
                f"| {paper} |"
            )
    ratios = fig7c_ratios(rows)
    if ratios:
        lines += [
            *([""] if lines else []),
            "| Fig. 7c | job size | deployment | JCT change: median [min, max] (jobs) "
            "| against | the paper (vs DCQCN) |",
            "|---|---:|---|---:|---|---|",
        ]
        for (part, n, opt), rs in sorted(ratios.items()):
            ch = sorted(100 * (x - 1) for x in rs)
            paper = PAPER_FIG7C.get(n, "") if opt in ("paper", "shipped") else ""
            lines.append(
                f"| {part} | {n} | {opt} | {statistics.median(ch):+.1f} % [{ch[0]:+.1f}, "
                f"{ch[-1]:+.1f}] ({len(ch)}) | {REFERENCE[opt]} | {paper} |"
            )
    path = out / "table.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def fig7c_ratios(rows: list[dict]) -> dict[tuple[str, int, str], list[float]]:
    """(part, job nodes, deployment) -> every job's JCT over its JCT under the deployment's
    reference on the same seed (the same job)."""
    jct: dict[tuple[str, str, int], dict[int, tuple[int, float]]] = {}
    for r in rows:
        if r["part"] in FIG7C_PARTS:
            jobs = json.loads(r["jobs"])
            jct[r["part"], r["option"], int(r["seed"])] = {j[0]: (j[1], j[5]) for j in jobs}
    out: dict[tuple[str, int, str], list[float]] = {}
    for (part, opt, seed), jobs in jct.items():
        ref = jct.get((part, REFERENCE[opt], seed))
        if ref is None or opt == REFERENCE[opt]:
            continue
        for j, (n, t) in jobs.items():
            out.setdefault((part, n, opt), []).append(t / ref[j][1])
    return out


def plot(rows: list[dict], out: Path) -> list[Path]:
    """table2.png: each cell's deployments' median JCT normalised to DCQCN alone's (the
    runs' range as bars); fig6.png: the same for the Transformer against compute reduction."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    all_ratios = fig7c_ratios(rows)
    for part in FIG7C_PARTS:
        ratios = {(n, o): v for (p, n, o), v in all_ratios.items() if p == part}
        if not ratios:
            continue
        fig, ax = plt.subplots(figsize=(7, 4))
        opts = sorted({o for _, o in ratios})
        sizes = sorted({n for n, _ in ratios})
        for i, opt in enumerate(opts):
            data = [[x for x in ratios.get((n, opt), [])] for n in sizes]
            pos = [k + (i - (len(opts) - 1) / 2) * 0.8 / len(opts) for k in range(len(sizes))]
            bp = ax.boxplot(data, positions=pos, widths=0.6 / len(opts), patch_artist=True)
            for b in bp["boxes"]:
                b.set_facecolor(f"C{i}")
            ax.plot([], [], color=f"C{i}", lw=6, label=f"{opt} / {REFERENCE[opt]}")
        px = [k for k, n in enumerate(sizes) if n in PAPER_FIG7C_RATIO]
        ax.plot(px, [PAPER_FIG7C_RATIO[sizes[k]] for k in px], "kx", ms=9, label="the paper")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([f"{n}-node jobs" for n in sizes])
        ax.set_ylabel("job's JCT, normalised")
        ax.set_title(
            "Fig. 7c: random arrivals on 128 nodes"
            + (" (a stream, 16-128 passes)" if part == "fig7c-stream" else " (one wave)")
        )
        ax.legend(fontsize=7)
        written.append(_save(fig, out / f"{part}.png"))
    for part in ("table2", "fig6"):
        sel = [r for r in rows if r["part"] == part]
        if not sel:
            continue
        fig, ax = plt.subplots(figsize=(8, 4))
        groups = sorted({(r["model"], int(r["hosts"]), int(r["compute_reduction"])) for r in sel})
        for i, opt in enumerate(o for o in OPTIONS if o != "dcqcn"):
            xs, ys, lo, hi = [], [], [], []
            for g, (m, h, red) in enumerate(groups):
                cell = [
                    r
                    for r in sel
                    if (r["model"], int(r["hosts"]), int(r["compute_reduction"])) == (m, h, red)
                ]
                base = [r for r in cell if r["option"] == "dcqcn"]
                mine = [float(r["jct_ms"]) for r in cell if r["option"] == opt]
                if not base or not mine:
                    continue
                b = _median(base)
                xs.append(g + (i - 2) * 0.15)
                ys.append(statistics.median(mine) / b)
                lo.append(ys[-1] - min(mine) / b)
                hi.append(max(mine) / b - ys[-1])
            if xs:
                ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=3, label=opt, color=f"C{i}")
        if part == "fig6" and any(red == 64 for _, _, red in groups):  # "about -30 % at 64x"
            k = [g for g, (_, _, red) in enumerate(groups) if red == 64]
            ax.plot(k, [0.70] * len(k), "kx", markersize=9, label="the paper (Fig. 6, 64x)")
        if part == "table2":  # the paper's Symphony over its baseline, beside ours
            px = [g for g, (m, h, _) in enumerate(groups) if (m, h) in PAPER_TABLE2]
            py = [
                PAPER_TABLE2[m, h][1] / PAPER_TABLE2[m, h][0]
                for m, h, _ in groups
                if (m, h) in PAPER_TABLE2
            ]
            ax.plot(px, py, "kx", markersize=9, label="the paper (Table 2)")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(
            [f"{m}\n{h} nodes" if part == "table2" else f"1/{red}" for m, h, red in groups]
        )
        ax.set_ylabel("JCT / DCQCN alone's (median)")
        ax.set_title(
            "Table 2's workloads, one iteration"
            if part == "table2"
            else "Fig. 6: the Transformer as compute shrinks"
        )
        ax.legend(fontsize=7)
        written.append(_save(fig, out / f"{part}.png"))
    return written


def _save(fig, path: Path) -> Path:  # type: ignore[no-untyped-def]
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def write_csv(rows: list[dict], out: Path) -> Path:
    path = out / "runs.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS)
        w.writeheader()
        for r in sorted(rows, key=lambda r: tuple(str(r.get(f, "")) for f in FIELDS[:6])):
            w.writerow({f: r.get(f, "") for f in FIELDS})  # older rows lack later fields
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evaluation.fabric.training_eval")
    ap.add_argument("--part", action="append", choices=("table2", "fig6", *FIG7C_PARTS))
    ap.add_argument("--hosts", type=int, nargs="+", default=[128], choices=(16, 32, 128, 512))
    ap.add_argument("--model", action="append", choices=sorted(MODELS))
    ap.add_argument("--option", action="append", choices=OPTIONS)
    ap.add_argument("--seeds", type=int, default=len(SEEDS), help="held-out seeds from 100")
    ap.add_argument(
        "--first-seed",
        type=int,
        default=SEEDS.start,
        help="the first of the --seeds (machines sharing a sweep split its seeds)",
    )
    ap.add_argument("--cluster", help="'local' (a Dask LocalCluster of --jobs) or an address")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("build/training"))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    runs = grid(
        args.part or ["table2"],
        args.hosts,
        args.model or ["resnet50", "vgg16"],
        range(args.first_seed, args.first_seed + args.seeds),
        args.option or list(OPTIONS),
    )
    store = RunStore(args.out / "runs.jsonl")
    try:
        if args.report_only:
            results = [store.results[k] for k in map(training_key, runs) if k in store]
        elif args.cluster == "local":
            with local_cluster(args.jobs) as address:
                results = run_sweep(
                    runs, store, cluster=address, fn=execute_training, key=training_key
                )
        else:
            results = run_sweep(
                runs,
                store,
                workers=args.jobs,
                cluster=args.cluster,
                fn=execute_training,
                key=training_key,
            )
    finally:
        store.close()
    rows = [r.row for r in results]
    print(write_csv(rows, args.out), report(rows, args.out), *plot(rows, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
