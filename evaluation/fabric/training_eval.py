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
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from evaluation.fabric.config import FabricConfig
from evaluation.fabric.kernel import RESULTS_VERSION
from evaluation.fabric.regime_map import BY_NAME, Regime, config
from evaluation.fabric.sweep import Result, RunStore, config_hash, local_cluster, run_sweep
from evaluation.fabric.training import TRAINING_VERSION, Scales, simulate_training
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
)


@dataclass(frozen=True)
class TrainingRun:
    part: str  # table2 | fig6
    model: str
    hosts: int
    option: str
    seed: int
    compute_reduction: int = 1  # Fig. 6: compute times / this

    @property
    def cfg(self) -> FabricConfig:
        return config(Regime("2d", "windowed", self.hosts, 8 << 20), BY_NAME[self.option])


def _workload_digest(model: str) -> str:
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


def execute_training(run: TrainingRun) -> Result:
    """One iteration, anywhere (a pool process or a Dask worker)."""
    t0 = time.perf_counter()
    r = simulate_training(
        read_text(MODELS[run.model]), run.cfg, run.seed, Scales(compute=1 / run.compute_reduction)
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
        k = (r["part"], r["model"], int(r["hosts"]), int(r["compute_reduction"]))
        cells.setdefault(k, {}).setdefault(r["option"], []).append(r)
    lines = [
        "| part | model | nodes | compute / | deployment | JCT ms: median [min, max] (seeds) "
        "| vs reference | compute alone ms | the paper |",
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
            lines.append(
                f"| {part} | {model} | {hosts} | {red} | {opt} | {med:.1f} [{jcts[0]:.1f}, "
                f"{jcts[-1]:.1f}] ({len(rs)}) | {change} | {float(rs[0]['comm_free_ms']):.2f} "
                f"| {paper} |"
            )
    path = out / "table.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def plot(rows: list[dict], out: Path) -> list[Path]:
    """table2.png: each cell's deployments' median JCT normalised to DCQCN alone's (the
    runs' range as bars); fig6.png: the same for the Transformer against compute reduction."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
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
            ax.errorbar(xs, ys, yerr=[lo, hi], fmt="o", capsize=3, label=opt)
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
        fig.tight_layout()
        path = out / f"{part}.png"
        fig.savefig(path, dpi=120)
        plt.close(fig)
        written.append(path)
    return written


def write_csv(rows: list[dict], out: Path) -> Path:
    path = out / "runs.csv"
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS)
        w.writeheader()
        for r in sorted(rows, key=lambda r: tuple(str(r[f]) for f in FIELDS[:6])):
            w.writerow({f: r[f] for f in FIELDS})
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evaluation.fabric.training_eval")
    ap.add_argument("--part", action="append", choices=("table2", "fig6"))
    ap.add_argument("--hosts", type=int, nargs="+", default=[128], choices=(16, 32, 128, 512))
    ap.add_argument("--model", action="append", choices=sorted(MODELS))
    ap.add_argument("--option", action="append", choices=OPTIONS)
    ap.add_argument("--seeds", type=int, default=len(SEEDS), help="held-out seeds from 100")
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
        range(100, 100 + args.seeds),
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
