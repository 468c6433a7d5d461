"""Run the regime cells in ns-3 (crossval_regimes): for each (scenario, regime, variant, run) the
kernel's workload of seed `run` is written as our driver's files (`ns3_export`) and ns-3 runs it
with RngRun = run. ns-3 and the driver are built by hand outside the repository (docs/evaluation.md,
"Cross-validation in every regime"); point `--ns3` (or SYMPHONY_NS3) at the driver's binary.
Results are stored one JSON line per run the moment it ends (resumable: a stored run is not
run again); `--print` writes the `crossval_regimes.NS3` literal from the store.

    python -m evaluation.fabric.ns3_run --ns3 $SYMPHONY_NS3 --runs 100 101 102
    python -m evaluation.fabric.ns3_run --print
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from evaluation.fabric import crossval_regimes as xr
from evaluation.fabric import ns3_export
from evaluation.fabric.config import FabricConfig

STORE = Path("build/crossval/ns3-runs-schedule.jsonl")


def cell_dir(root: Path, scenario: str, regime: str, variant: str, run: int) -> Path:
    return root / scenario / regime / variant / str(run)


@dataclass(frozen=True)
class DriverRun:
    """What one run of our ns-3 driver gave: the collective's completion and its `stat` lines."""

    cct_ms: float
    stats: dict[str, float]
    wall_s: float


def run_driver(ns3: str, cfg: FabricConfig, run: int, d: Path, post: str = "schedule") -> DriverRun:
    """ns-3 on any kernel configuration: the kernel's workload of seed `run` written as the
    driver's files in `d`, ns-3 run on them with RngRun = run, its whole output kept beside them.
    `post`: when a flow whose predecessors are delivered starts in the driver: "schedule" after
    the receiver has queued its ACK of the delivering packet (the kernel's order: it queues the
    ACK in the same event and pops the successor's start after it), "direct" before it."""
    ns3_export.write(cfg, run, d)
    t0 = time.time()
    out = subprocess.run(
        [
            ns3,
            f"--config={d / 'config.txt'}",
            f"--topo={d / 'topology.txt'}",
            f"--workload={d / 'workload.txt'}",
            f"--symphony={d / 'symphony.txt'}",
            f"--RngRun={run}",
            f"--post={post}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    (d / "ns3.out").write_text(out.stdout)
    (d / "ns3.err").write_text(out.stderr)
    if out.returncode != 0:
        raise RuntimeError(f"ns-3 failed in {d} (exit {out.returncode}): {out.stderr[-500:]}")
    stats = {
        p[1]: float(p[2])
        for p in (ln.split() for ln in out.stdout.splitlines())
        if p[:1] == ["stat"]
    }
    return DriverRun(xr.parse_driver_output(out.stdout), stats, round(time.time() - t0, 1))


def run_one(
    ns3: str, root: Path, cell: tuple[str, str, str, int], post: str = "schedule"
) -> dict[str, object]:
    """One ns-3 run of a cross-validation cell (`run_driver` on its configuration)."""
    scenario, regime, variant, run = cell
    d = cell_dir(root, scenario, regime, variant, run)
    r = run_driver(ns3, xr.scenario_config(scenario, regime, variant), run, d, post)
    return {
        "scenario": scenario,
        "regime": regime,
        "variant": variant,
        "run": run,
        "cct_ms": r.cct_ms,
        "stats": r.stats,
        "wall_s": r.wall_s,
        "post": post,
    }


def stored(store: Path) -> Iterator[dict[str, object]]:
    if store.exists():
        for line in store.read_text().splitlines():
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line


def ns3_literal(store: Path) -> str:
    """The `NS3` dict of crossval_regimes from the stored runs."""
    cells: dict[tuple[str, str, str], dict[int, float]] = {}
    for r in stored(store):
        key = (str(r["scenario"]), str(r["regime"]), str(r["variant"]))
        cells.setdefault(key, {})[int(r["run"])] = round(float(r["cct_ms"]), 3)  # type: ignore[arg-type]
    lines = ["NS3: dict[tuple[str, str, str], Ns3Runs] = {"]
    for key in sorted(cells):
        runs = ", ".join(f"{k}: {v}" for k, v in sorted(cells[key].items()))
        lines.append(f"    {key!r}: Ns3Runs({{{runs}}}),")
    lines.append("}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ns3", default=os.environ.get("SYMPHONY_NS3"), help="the driver's binary")
    ap.add_argument("--runs", type=int, nargs="+", default=[100, 101, 102])
    ap.add_argument("--scenario", action="append", choices=sorted(xr.SCENARIOS))
    ap.add_argument("--regime", action="append", choices=sorted(xr.REGIMES))
    ap.add_argument("--variant", action="append", choices=xr.VARIANTS)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--root", type=Path, default=Path("build/crossval/ns3-schedule"))
    ap.add_argument("--store", type=Path, default=STORE)
    ap.add_argument("--print", action="store_true", help="print the NS3 literal and stop")
    ap.add_argument(
        "--post",
        choices=("schedule", "direct"),
        default="schedule",
        help="a successor starts after the receiver's ACK is queued (the kernel's order) or before",
    )
    args = ap.parse_args(argv)
    if args.print:
        print(ns3_literal(args.store))
        return
    if not args.ns3:
        ap.error("--ns3 (or SYMPHONY_NS3): the driver's binary, built by hand (docs/evaluation.md)")
    done = {(r["scenario"], r["regime"], r["variant"], r["run"]) for r in stored(args.store)}
    cells = [
        (s, r, v, n)
        for n in args.runs
        for s in args.scenario or xr.SCENARIOS
        for r in args.regime or xr.REGIMES
        for v in args.variant or xr.VARIANTS
        if (s, r, v, n) not in done
    ]
    args.store.parent.mkdir(parents=True, exist_ok=True)
    with (
        ProcessPoolExecutor(max_workers=args.workers) as pool,
        open(args.store, "a") as fh,
        tqdm(total=len(cells), desc="ns-3 runs", unit="run") as bar,
    ):
        futures = {pool.submit(run_one, args.ns3, args.root, c, args.post): c for c in cells}
        for fut in as_completed(futures):
            try:
                res = fut.result()
            except RuntimeError as e:
                tqdm.write(str(e))
                continue
            fh.write(json.dumps(res) + "\n")
            fh.flush()
            bar.update(1)
            tqdm.write(f"{futures[fut]}: {res['cct_ms']:.1f} ms in {res['wall_s']} s")


if __name__ == "__main__":
    main()
